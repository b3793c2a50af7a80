#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace textgen::model {

// Validated sampling parameters (validation happens at the API edge).
struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy
  int top_k = 0;                    // 0 = off
  float top_p = 1.0f;               // (0, 1]
  float min_p = 0.0f;               // [0, 1]
  float repetition_penalty = 1.0f;  // > 0; 1 = off (prompt and generated tokens)
  float presence_penalty = 0.0f;    // [-2, 2]; generated tokens
  float frequency_penalty = 0.0f;   // [-2, 2]; generated tokens
  uint64_t seed = 0;
  std::vector<std::pair<int, float>> logit_bias;  // token id -> added logit
  int top_logprobs = 0;                           // how many alternatives to report; 0 = none
};

struct TokenLogprob {
  int token = -1;
  float logprob = 0.0f;
};

struct SampleResult {
  int token = -1;
  float logprob = 0.0f;           // of the chosen token
  std::vector<TokenLogprob> top;  // top_logprobs best, descending
};

// Turns logits into tokens for one sequence; owns its seeded RNG and penalty counts, so a
// sequence samples the same tokens whatever else is batched with it. Not thread-safe.
//
// Sample() applies, in this order (see sampler.cc):
//   1. logit_bias               logit[t] += bias (a very negative bias bans t)
//   2. repetition penalty       HF/CTRL: for t in prompt ∪ generated (each once),
//                               logit > 0 ? logit / r : logit * r
//   3. presence / frequency     OpenAI: logit[t] -= count[t] * frequency + (count[t] > 0) *
//   presence,
//                               count over generated tokens only
//   4. logprobs                 log_softmax of the logits after 1-3 (no temperature/filters);
//                               the chosen token's logprob and the top_logprobs best
//   5. temperature == 0         greedy: argmax, ties -> lowest id; stop here
//   6. temperature              logits / T
//   7. top-k                    keep the k largest (ties -> lower ids), 0 = off
//   8. top-p                    keep the smallest most-probable prefix with cumulative prob >=
//   top_p
//   9. min-p                    drop tokens with p < min_p * p_max
//  10. sample                   from the renormalised remaining distribution with the RNG
// then records the chosen token in the penalty state. Same seed + same logits sequence gives
// the same tokens. Ids in logit_bias / the prompt outside [0, vocab) are ignored; NaN logits
// count as -inf and +inf as the largest float.
class Sampler {
 public:
  Sampler(const SamplingParams& params, std::span<const int> prompt_tokens);

  // Picks the next token from `logits` ([vocab], non-empty) and records it. After a first call
  // with a given vocab size, later calls do no heap allocation beyond the returned `top`.
  SampleResult Sample(std::span<const float> logits);

  // The distribution Sample() would draw from next (steps 1-3 and 5-9), as [vocab] probabilities;
  // one-hot for greedy. Does not touch the RNG or the penalty state. For tests and diagnostics.
  std::vector<float> Distribution(std::span<const float> logits);

  // Records `token` as generated without sampling it (e.g. a token forced by the caller).
  void Accept(int token);

  const SamplingParams& params() const { return params_; }
  // Tokens recorded so far by Sample() / Accept().
  int num_generated() const { return num_generated_; }

 private:
  // Copies `logits` into logits_ and applies steps 1-3.
  void ProcessLogits(std::span<const float> logits);
  // Sets max_logit_ and weights_[t] = exp(logit - max) for every token; returns
  // log(sum_t exp(logit - max)), so log_softmax = logit - max - that (-inf: all banned).
  double LogNormalizer();
  // Steps 6-9 on logits_: leaves the surviving ids in candidates_[0, return value) and their
  // unnormalised probabilities in weights_ (indexed by token id). Returns the survivors' count.
  // Needs LogNormalizer() first (temperature 1 reuses its weights).
  int FilterCandidates();
  // Whether steps 6-9 keep every token as it is (temperature 1, no top-k/top-p/min-p), so
  // DrawFromAll() applies.
  bool KeepsWholeVocab() const;
  // Draws from weights_ over the whole vocab: finds the 64-token block where the running sum
  // crosses the draw, then the token inside it (banned tokens weigh 0 and are never drawn).
  int DrawFromAll();
  // Puts the top_k best non-banned ids in candidates_[0, k) (any order); returns k.
  int SelectTopK(int k);
  // Reorders candidates_[0, n) so that the smallest best-first prefix whose weight reaches
  // top_p * total comes first (in any order); returns its length. Expected O(n).
  int TopPCut(int n, double total_weight);
  // Grows the per-token state to at least `size` entries (never shrinks).
  void ResizeState(int size);
  // Temperature 0 (or one too small to divide by).
  bool IsGreedy() const;
  int Greedy() const;
  // Strict total order: higher processed logit first, ties -> lower id first.
  bool Better(int a, int b) const {
    return logits_[a] > logits_[b] || (logits_[a] == logits_[b] && a < b);
  }

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<int> prompt_tokens_;
  int num_generated_ = 0;
  // Penalty state, sized on the first Sample() to the vocab (ids >= vocab are ignored):
  std::vector<int32_t> generated_count_;  // [vocab] times each token was generated
  std::vector<uint8_t> seen_;             // [vocab] 1 if in prompt or generated
  std::vector<int> seen_tokens_;          // distinct ids with seen_ == 1
  std::vector<int> generated_tokens_;     // distinct ids with generated_count_ > 0
  // Scratch reused across calls (avoids per-step allocation):
  std::vector<float> logits_;       // [vocab] processed logits
  std::vector<float> weights_;      // [vocab] exp((logit - max) / T) for candidates
  float max_logit_ = 0.0f;          // max of logits_
  std::vector<int> candidates_;     // [vocab] token ids still in the running
  std::vector<double> block_sums_;  // [vocab / 64] weight of each 64-token block
};

}  // namespace textgen::model
