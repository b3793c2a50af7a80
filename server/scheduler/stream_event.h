#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "model/runtime/sampler.h"

namespace textgen::server {

// Why a generation ended. (No "context full": validation resolves max_new_tokens to fit the
// context, so kLength always comes first.)
// kToolCalls is never the engine's: ReplyFinishReason gives it to a reply that ended with calls.
enum class FinishReason { kEos, kStopSequence, kStopToken, kLength, kToolCalls };

// Why a reply ended, as every API reports it: with tool calls when it ended with some, unless
// the length limit cut it (then kLength: the last call may be incomplete). The one owner of
// that rule.
inline FinishReason ReplyFinishReason(FinishReason engine_reason, bool ended_with_tool_calls) {
  if (ended_with_tool_calls && engine_reason != FinishReason::kLength) {
    return FinishReason::kToolCalls;
  }
  return engine_reason;
}

// New tokens of one request (possibly several when text was held back for a stop string).
struct TokenEvent {
  std::string text;  // whole UTF-8 characters only
  std::vector<int> token_ids;
  std::vector<model::SampleResult> logprobs;  // parallel to token_ids when asked for
};

struct Usage {
  int prompt_tokens = 0;
  int cached_tokens = 0;
  int completion_tokens = 0;
};

struct Timings {
  double queue_seconds = 0;
  double time_to_first_token_seconds = 0;
  double decode_seconds = 0;
  double total_seconds = 0;
  double constraint_compile_seconds = 0;  // 0 without a constraint or from the cache
  bool constraint_cache_hit = false;
};

// The last event of a successful request.
struct FinishedEvent {
  FinishReason reason = FinishReason::kLength;
  std::string text;  // final text delta (held-back bytes), may be empty
  std::vector<int> token_ids;
  std::vector<model::SampleResult> logprobs;
  std::string matched_stop;
  Usage usage;
  Timings timings;
  uint64_t seed = 0;
  std::vector<float> embedding;  // an embedding request's result
};

// The last event of a failed request (status is never OK).
struct ErrorEvent {
  absl::Status status;
};

using StreamEvent = std::variant<TokenEvent, FinishedEvent, ErrorEvent>;

// Token ids an event carries (what a front end counts as generated).
inline int CountTokens(const StreamEvent& event) {
  if (const auto* token = std::get_if<TokenEvent>(&event)) return token->token_ids.size();
  if (const auto* finished = std::get_if<FinishedEvent>(&event)) return finished->token_ids.size();
  return 0;
}

}  // namespace textgen::server
