#include "model/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "model/kernels/fast_math.h"
#include "model/kernels/simd.h"

namespace textgen::model {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Up to this k, top-k scans the vocab once with a k-element heap (most tokens are rejected by a
// single comparison with the heap's worst); above it, nth_element.
constexpr int kHeapTopKLimit = 1024;

// exp(x) for x <= 0, exactly 0 below -87.3 (so -inf logits, i.e. banned tokens, weigh
// nothing). The engine's vectorizable Cephes exp: std::exp is a scalar libm call and
// dominated the cost of a sampling step.
inline float ExpNonPositive(float x) { return x < -87.3f ? 0.0f : ops::FastExp(x); }

// w[t] = ExpNonPositive(l[t] - max_logit) over the whole vocab. Compiled for AVX-512 too
// (the project builds without -march, and the baseline SSE2 has no vector floor, which left
// this loop scalar: 8% of a 64-stream server step). Each element is computed the same way
// in either clone.
TEXTGEN_SIMD_CLONES void ExpRelativeToMax(const float* l, size_t n, float max_logit, float* w) {
  for (size_t t = 0; t < n; ++t) w[t] = ExpNonPositive(l[t] - max_logit);
}

// Sum in double with independent partial sums (the loop stays cheap and the order fixed).
double SumWeights(const float* w, size_t n) {
  double s[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s[0] += w[i];
    s[1] += w[i + 1];
    s[2] += w[i + 2];
    s[3] += w[i + 3];
  }
  for (; i < n; ++i) s[0] += w[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// NaN -> -inf (never chosen), +inf -> the largest float (so that l - max stays finite).
inline float Sanitize(float l) {
  return std::isnan(l) ? kNegInf : std::min(l, std::numeric_limits<float>::max());
}

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
  for (int t = 0; t < vocab; ++t) logits_[t] = Sanitize(logits[t]);

  for (const auto& [token, bias] : params_.logit_bias) {
    if (token >= 0 && token < vocab) logits_[token] = Sanitize(logits_[token] + bias);
  }
  // HF RepetitionPenaltyLogitsProcessor (CTRL paper): each distinct token in prompt+generated
  // once; dividing positive and multiplying negative logits makes the token less likely either way.
  const float r = params_.repetition_penalty;
  if (r != 1.0f) {
    for (int token : seen_tokens_) {
      if (token >= vocab) continue;
      float& l = logits_[token];
      l = Sanitize(l < 0.0f ? l * r : l / r);
    }
  }
  // OpenAI: mu[j] -= c[j] * frequency_penalty + (c[j] > 0) * presence_penalty.
  const float presence = params_.presence_penalty;
  const float frequency = params_.frequency_penalty;
  if (presence != 0.0f || frequency != 0.0f) {
    for (int token : generated_tokens_) {
      if (token >= vocab) continue;
      logits_[token] = Sanitize(logits_[token] -
                                static_cast<float>(generated_count_[token]) * frequency - presence);
    }
  }
}

double Sampler::LogNormalizer() {
  // Eight running maxima so the loop vectorizes (logits_ holds no NaN).
  const size_t vocab = logits_.size();
  const float* l = logits_.data();
  float m[8];
  std::fill(m, m + 8, kNegInf);
  size_t i = 0;
  for (; i + 8 <= vocab; i += 8) {
    for (int j = 0; j < 8; ++j) m[j] = l[i + j] > m[j] ? l[i + j] : m[j];
  }
  for (; i < vocab; ++i) m[0] = l[i] > m[0] ? l[i] : m[0];
  const float max_logit = *std::max_element(m, m + 8);
  max_logit_ = max_logit;
  if (max_logit == kNegInf) return kNegInf;
  float* w = weights_.data();
  ExpRelativeToMax(l, vocab, max_logit, w);
  return std::log(SumWeights(w, vocab));
}

bool Sampler::IsGreedy() const {
  // A temperature so small that 1 / T overflows is the greedy limit too.
  return !(params_.temperature > 0.0f) || std::isinf(1.0f / params_.temperature);
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

int Sampler::SelectTopK(int k) {
  const int vocab = static_cast<int>(logits_.size());
  auto better = [this](int a, int b) { return Better(a, b); };
  int* c = candidates_.data();
  if (k > kHeapTopKLimit) {
    int n = 0;
    for (int t = 0; t < vocab; ++t) {
      if (logits_[t] != kNegInf) c[n++] = t;
    }
    if (k >= n) return n;
    std::nth_element(c, c + k, c + n, better);
    return k;
  }
  // Heap of the k best so far; with `better` as the heap order, c[0] is the worst of them.
  int n = 0;
  for (int t = 0; t < vocab; ++t) {
    if (logits_[t] == kNegInf) continue;
    if (n < k) {
      c[n++] = t;
      std::push_heap(c, c + n, better);
    } else if (Better(t, c[0])) {
      std::pop_heap(c, c + n, better);
      c[n - 1] = t;
      std::push_heap(c, c + n, better);
    }
  }
  return n;
}

int Sampler::TopPCut(int n, double total_weight) {
  // Weighted quickselect: find the cut of the best-first order without sorting. Everything
  // before `lo` is known to be kept (mass `kept`); the cut lies in [lo, hi).
  const double target = static_cast<double>(params_.top_p) * total_weight;
  auto better = [this](int a, int b) { return Better(a, b); };
  int* c = candidates_.data();
  int lo = 0, hi = n;
  double kept = 0.0;
  while (lo < hi) {
    int a = c[lo], b = c[lo + (hi - lo) / 2], d = c[hi - 1];  // median-of-three pivot
    if (Better(b, a)) std::swap(a, b);
    if (Better(d, b)) std::swap(b, d);
    if (Better(b, a)) std::swap(a, b);
    const int pivot = b;
    int* mid = std::partition(c + lo, c + hi, [&](int x) { return better(x, pivot); });
    std::iter_swap(mid, std::find(mid, c + hi, pivot));
    double upper = 0.0;
    for (int* it = c + lo; it != mid; ++it) upper += weights_[*it];
    if (kept + upper >= target) {
      hi = static_cast<int>(mid - c);  // the cut is among the tokens better than the pivot
      continue;
    }
    kept += upper + weights_[pivot];
    lo = static_cast<int>(mid - c) + 1;
    if (kept >= target) return lo;
  }
  return std::max(lo, 1);  // everything (rounding), or the best token alone (top_p ~ 0)
}

int Sampler::FilterCandidates() {
  const int vocab = static_cast<int>(logits_.size());
  int n = 0;
  if (params_.top_k > 0 && params_.top_k < vocab) {
    n = SelectTopK(params_.top_k);
  } else {
    for (int t = 0; t < vocab; ++t) {
      if (logits_[t] != kNegInf) candidates_[n++] = t;  // banned: never a candidate
    }
  }
  if (n == 0) return 0;

  // Temperature: subtracting the max first keeps (l - max) / T finite for tiny T. With T = 1
  // LogNormalizer() already computed these weights.
  if (params_.temperature != 1.0f) {
    const float inv_t = 1.0f / params_.temperature;
    for (int i = 0; i < n; ++i) {
      const int t = candidates_[i];
      weights_[t] = ExpNonPositive((logits_[t] - max_logit_) * inv_t);
    }
  }
  double total = 0.0;
  for (int i = 0; i < n; ++i) total += weights_[candidates_[i]];

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
    for (int i = 0; i < n; ++i) {
      const int t = candidates_[i];
      if (weights_[t] >= threshold) candidates_[kept++] = t;
    }
    n = kept;
  }
  return n;
}

bool Sampler::KeepsWholeVocab() const {
  const int vocab = static_cast<int>(logits_.size());
  return params_.temperature == 1.0f && (params_.top_k <= 0 || params_.top_k >= vocab) &&
         params_.top_p >= 1.0f && params_.min_p <= 0.0f;
}

// Why two levels: a token-by-token running sum in double over a 32,000-token vocab is one
// long dependency chain, and drawing that way took 6% of a 64-stream step. Block sums use
// independent chains; only one block is walked token by token.
int Sampler::DrawFromAll() {
  constexpr int kBlock = 64;
  const int vocab = static_cast<int>(weights_.size());
  const int blocks = (vocab + kBlock - 1) / kBlock;
  block_sums_.resize(blocks);
  double total = 0.0;
  for (int b = 0; b < blocks; ++b) {
    const int begin = b * kBlock;
    block_sums_[b] = SumWeights(weights_.data() + begin, std::min(kBlock, vocab - begin));
    total += block_sums_[b];
  }
  const double u = Uniform01(rng_) * total;
  double base = 0.0;  // weight of the blocks before b
  for (int b = 0; b < blocks; ++b) {
    if (u < base + block_sums_[b]) {
      double cumulative = base;
      const int end = std::min(vocab, (b + 1) * kBlock);
      for (int t = b * kBlock; t < end; ++t) {
        cumulative += weights_[t];
        if (u < cumulative) return t;
      }
      // Rounding left the walk short of the block sum: the draw moves on to the next token
      // with weight.
    }
    base += block_sums_[b];
  }
  for (int t = vocab - 1; t > 0; --t) {
    if (weights_[t] > 0.0f) return t;  // u at the very top (rounding)
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------

SampleResult Sampler::Sample(std::span<const float> logits) {
  SampleResult result;
  if (logits.empty()) return result;  // nothing to choose from; token stays -1
  ProcessLogits(logits);
  const int vocab = static_cast<int>(logits_.size());

  // Step 4: log_softmax of the processed logits.
  // logprob = (l - max) - log(sum exp(l - max)): relative to the max so huge logits keep precision.
  const double log_sum = LogNormalizer();
  auto logprob = [&](int t) {
    return logits_[t] == kNegInf ? kNegInf
                                 : static_cast<float>((logits_[t] - max_logit_) - log_sum);
  };
  if (params_.top_logprobs > 0) {
    const int n = std::min(params_.top_logprobs, vocab);
    int* c = candidates_.data();
    std::iota(c, c + vocab, 0);
    std::partial_sort(c, c + n, c + vocab, [this](int a, int b) { return Better(a, b); });
    result.top.reserve(n);
    for (int i = 0; i < n; ++i) result.top.push_back({c[i], logprob(c[i])});
  }

  if (IsGreedy() || max_logit_ == kNegInf) {
    // Greedy (also the fallback when every token is banned: id 0 with logprob -inf).
    result.token = Greedy();
  } else if (KeepsWholeVocab()) {
    result.token = DrawFromAll();
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
  LogNormalizer();
  if (IsGreedy() || max_logit_ == kNegInf) {
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
