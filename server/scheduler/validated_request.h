#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/runtime/sampler.h"

namespace textgen::server {

struct StoppingParams {
  int max_new_tokens = 0;  // resolved: >= 1
  int min_new_tokens = 0;
  std::vector<std::string> stop_strings;
  std::vector<int> stop_token_ids;
  bool ignore_eos = false;
};

struct OutputParams {
  bool logprobs = false;
  int top_logprobs = 0;
  bool echo = false;
};

// A Generate request after validation: prompt tokenized, every default resolved, limits
// checked. Only this type enters the scheduler.
struct ValidatedRequest {
  std::string request_id;
  std::vector<int> prompt_tokens;  // non-empty, every id < vocab_size
  std::string prompt_text;         // for echo; empty when the prompt came as ids
  std::string session_id;          // empty = no session; else SessionKey(principal, id)
  std::string principal;           // who sent it (empty without API keys)
  model::SamplingParams sampling;  // seed resolved
  StoppingParams stopping;
  OutputParams output;
  absl::Time arrival_time = absl::InfinitePast();
  absl::Time deadline = absl::InfiniteFuture();
};

}  // namespace textgen::server
