#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace textgen::model {

// Validated sampling parameters (validation happens at the API edge).
struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  int top_k = 0;             // 0 = off
  float top_p = 1.0f;        // (0, 1]
  float min_p = 0.0f;        // [0, 1]
  float repetition_penalty = 1.0f;  // > 0; 1 = off (prompt and generated tokens)
  float presence_penalty = 0.0f;    // [-2, 2]; generated tokens
  float frequency_penalty = 0.0f;   // [-2, 2]; generated tokens
  uint64_t seed = 0;
  std::vector<std::pair<int, float>> logit_bias;  // token id -> added logit
  int top_logprobs = 0;  // how many alternatives to report; 0 = none
};

struct TokenLogprob {
  int token = -1;
  float logprob = 0.0f;
};

struct SampleResult {
  int token = -1;
  float logprob = 0.0f;              // of the chosen token
  std::vector<TokenLogprob> top;     // top_logprobs best, descending
};

// Turns logits into tokens for one sequence; owns its seeded RNG and penalty counts, so a
// sequence samples the same tokens whatever else is batched with it. Not thread-safe.
class Sampler;

}  // namespace textgen::model
