#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace textgen::model {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// The first top-p pass sorts this many candidates; most nucleus cuts fall inside it, so a
// full O(V log V) sort is rarely needed.
constexpr int kTopPFirstChunk = 64;

// A uniform double in [0, 1) from the top 53 bits: the same on every standard library,
// unlike std::uniform_real_distribution.
double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

Sampler::Sampler(const SamplingParams& params, std::span<const int> prompt_tokens)
    : params_(params),
      rng_(params.seed),
      prompt_tokens_(prompt_tokens.begin(), prompt_tokens.end()) {}

void Sampler::ResizeState(int size) {
  if (static_cast<int>(generated_count_.size()) >= size) return;
  const int old_size = static_cast<int>(generated_count_.size());
  generated_count_.resize(size, 0);
  seen_.resize(size, 0);
  // Prompt ids that were out of range for the old size may be in range now.
  for (int token : prompt_tokens_) {
    if (token >= old_size && token < size && !seen_[token]) {
      seen_[token] = 1;
      seen_tokens_.push_back(token);
    }
  }
}

void Sampler::Accept(int token) {
  if (token < 0) return;
  ResizeState(token + 1);
  if (generated_count_[token]++ == 0) generated_tokens_.push_back(token);
  if (!seen_[token]) {
    seen_[token] = 1;
    seen_tokens_.push_back(token);
  }
  ++num_generated_;
}

// ---------------------------------------------------------------------------------------------
// Steps 1-3: logit_bias, repetition penalty, presence/frequency penalties.

void Sampler::ProcessLogits(std::span<const float> logits) {
  const int vocab = static_cast<int>(logits.size());
  ResizeState(vocab);
  logits_.resize(vocab);
  weights_.resize(vocab);
  candidates_.resize(vocab);
  for (int t = 0; t < vocab; ++t) logits_[t] = std::isnan(logits[t]) ? kNegInf : logits[t];

  for (const auto& [token, bias] : params_.logit_bias) {
    if (token >= 0 && token < vocab) logits_[token] += bias;
  }
  // HF RepetitionPenaltyLogitsProcessor (CTRL paper): each distinct token in prompt+generated
  // once; dividing positive and multiplying negative logits makes the token less likely either way.
  const float r = params_.repetition_penalty;
  if (r != 1.0f) {
    for (int token : seen_tokens_) {
      if (token >= vocab) continue;
      float& l = logits_[token];
      l = l < 0.0f ? l * r : l / r;
    }
  }
  // OpenAI: mu[j] -= c[j] * frequency_penalty + (c[j] > 0) * presence_penalty.
  const float presence = params_.presence_penalty;
  const float frequency = params_.frequency_penalty;
  if (presence != 0.0f || frequency != 0.0f) {
    for (int token : generated_tokens_) {
      if (token >= vocab) continue;
      logits_[token] -= static_cast<float>(generated_count_[token]) * frequency + presence;
    }
  }
}

int Sampler::Greedy() const {
  int best = 0;
  for (int t = 1; t < static_cast<int>(logits_.size()); ++t) {
    if (logits_[t] > logits_[best]) best = t;  // strict: ties keep the lower id
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Steps 6-9: temperature, top-k, top-p, min-p.

int Sampler::TopPCut(int n, double total_weight) {
  const double target = static_cast<double>(params_.top_p) * total_weight;
  auto by_logit = [this](int a, int b) {
    return logits_[a] > logits_[b] || (logits_[a] == logits_[b] && a < b);
  };
  int* c = candidates_.data();
  double cumulative = 0.0;
  int sorted = 0;
  while (sorted < n) {
    // Sort the next chunk: everything before `sorted` already outranks everything after it.
    const int end = std::min(n, std::max(kTopPFirstChunk, sorted * 4));
    if (end < n) std::nth_element(c + sorted, c + end, c + n, by_logit);
    std::sort(c + sorted, c + end, by_logit);
    for (int i = sorted; i < end; ++i) {
      cumulative += weights_[c[i]];
      if (cumulative >= target) return i + 1;
    }
    sorted = end;
  }
  return n;  // rounding kept the sum just under target: keep everything
}

int Sampler::FilterCandidates() {
  const int vocab = static_cast<int>(logits_.size());
  float max_logit = kNegInf;
  int n = 0;
  for (int t = 0; t < vocab; ++t) {
    if (logits_[t] == kNegInf) continue;  // banned: never a candidate
    candidates_[n++] = t;
    max_logit = std::max(max_logit, logits_[t]);
  }
  if (n == 0) return 0;

  auto by_logit = [this](int a, int b) {
    return logits_[a] > logits_[b] || (logits_[a] == logits_[b] && a < b);
  };
  if (params_.top_k > 0 && params_.top_k < n) {
    std::nth_element(candidates_.begin(), candidates_.begin() + params_.top_k,
                     candidates_.begin() + n, by_logit);
    n = params_.top_k;
  }

  // Temperature: subtracting the max first keeps (l - max) / T finite for tiny T.
  const float inv_t = 1.0f / params_.temperature;
  double total = 0.0;
  for (int i = 0; i < n; ++i) {
    const int t = candidates_[i];
    weights_[t] = std::exp((logits_[t] - max_logit) * inv_t);
    total += weights_[t];
  }

  if (params_.top_p < 1.0f) {
    const int kept = TopPCut(n, total);
    if (kept < n) {
      n = kept;
      total = 0.0;
      for (int i = 0; i < n; ++i) total += weights_[candidates_[i]];
    }
  }

  if (params_.min_p > 0.0f) {
    // p / p_max == w / w_max, so no normalisation is needed; the best token always survives.
    float w_max = 0.0f;
    for (int i = 0; i < n; ++i) w_max = std::max(w_max, weights_[candidates_[i]]);
    const float threshold = params_.min_p * w_max;
    int kept = 0;
    total = 0.0;
    for (int i = 0; i < n; ++i) {
      const int t = candidates_[i];
      if (weights_[t] >= threshold) {
        candidates_[kept++] = t;
        total += weights_[t];
      }
    }
    n = kept;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------

SampleResult Sampler::Sample(std::span<const float> logits) {
  SampleResult result;
  if (logits.empty()) return result;  // nothing to choose from; token stays -1
  ProcessLogits(logits);
  const int vocab = static_cast<int>(logits_.size());

  // Step 4: log_softmax of the processed logits, in double for a stable log-sum-exp.
  float max_logit = kNegInf;
  for (float l : logits_) max_logit = std::max(max_logit, l);
  double log_z = kNegInf;
  if (max_logit != kNegInf) {
    double sum = 0.0;
    for (float l : logits_) sum += std::exp(static_cast<double>(l) - max_logit);
    log_z = max_logit + std::log(sum);
  }
  auto logprob = [&](int t) {
    return logits_[t] == kNegInf ? kNegInf : static_cast<float>(logits_[t] - log_z);
  };

  if (params_.top_logprobs > 0) {
    const int n = std::min(params_.top_logprobs, vocab);
    std::iota(candidates_.begin(), candidates_.end(), 0);
    std::partial_sort(candidates_.begin(), candidates_.begin() + n, candidates_.end(),
                      [this](int a, int b) {
                        return logits_[a] > logits_[b] || (logits_[a] == logits_[b] && a < b);
                      });
    result.top.reserve(n);
    for (int i = 0; i < n; ++i) result.top.push_back({candidates_[i], logprob(candidates_[i])});
  }

  if (params_.temperature <= 0.0f || max_logit == kNegInf) {
    // Greedy (also the fallback when every token is banned: id 0 with logprob -inf).
    result.token = Greedy();
  } else {
    const int n = FilterCandidates();
    double total = 0.0;
    for (int i = 0; i < n; ++i) total += weights_[candidates_[i]];
    const double u = Uniform01(rng_) * total;
    double cumulative = 0.0;
    result.token = candidates_[n - 1];  // if rounding leaves u >= the final sum
    for (int i = 0; i < n; ++i) {
      cumulative += weights_[candidates_[i]];
      if (u < cumulative) {
        result.token = candidates_[i];
        break;
      }
    }
  }
  result.logprob = logprob(result.token);
  Accept(result.token);
  return result;
}

std::vector<float> Sampler::Distribution(std::span<const float> logits) {
  std::vector<float> probs(logits.size(), 0.0f);
  if (logits.empty()) return probs;
  ProcessLogits(logits);
  bool all_banned = true;
  for (float l : logits_) all_banned = all_banned && l == kNegInf;
  if (params_.temperature <= 0.0f || all_banned) {
    probs[Greedy()] = 1.0f;
    return probs;
  }
  const int n = FilterCandidates();
  double total = 0.0;
  for (int i = 0; i < n; ++i) total += weights_[candidates_[i]];
  for (int i = 0; i < n; ++i) {
    probs[candidates_[i]] = static_cast<float>(weights_[candidates_[i]] / total);
  }
  return probs;
}

}  // namespace textgen::model
