#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model/arch/model_config.h"
#include "model/chat/chat_output_parser.h"
#include "model/constraint/grammar.h"
#include "model/constraint/token_trie.h"
#include "model/runtime/sampler.h"

namespace textgen::server {

struct StoppingParams {
  int max_new_tokens = 0;  // resolved: >= 1
  int min_new_tokens = 0;
  std::vector<std::string> stop_strings;
  std::vector<int> stop_token_ids;
  bool ignore_eos = false;
};

// The compiled output constraint, when the request has one.
struct ConstraintParams {
  std::shared_ptr<const model::Grammar> grammar;  // null: unconstrained
  std::shared_ptr<const model::TokenTrie> token_trie;
  double compile_seconds = 0;
  bool cache_hit = false;
  // Non-empty: the output is free until it contains this text; what follows it must match
  // the grammar (a tool call after its opening tag). If the token that completes the
  // trigger goes on with bytes the grammar refuses, the constraint is dropped.
  std::string trigger;
  // >= 0: the constraint is also armed when this token is sampled: a tag the vocabulary holds
  // as one control token (Mistral's [TOOL_CALLS], Phi-4's <|tool_call|>) decodes to no text.
  int trigger_token = -1;
};

// An embedding request: the prompt is prefilled and pooled, nothing is generated.
struct EmbeddingParams {
  model::Pooling pooling = model::Pooling::kLast;
  int dimensions = 0;  // keep the first N values (0: all)
  bool normalize = true;
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
  bool speculate = true;           // may draft when the server speculates
  StoppingParams stopping;
  OutputParams output;
  ConstraintParams constraint;
  // Chat: how the front ends split the reply into content, reasoning and tool calls (the
  // scheduler does not read it).
  std::optional<model::ChatOutputOptions> reply;
  // Set: an embedding (stopping, sampling and output are not used; max_new_tokens is 0).
  std::optional<EmbeddingParams> embedding;
  absl::Time arrival_time = absl::InfinitePast();
  absl::Time deadline = absl::InfiniteFuture();
};

}  // namespace textgen::server
