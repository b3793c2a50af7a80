#include "model/kernels/expert_routing.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace textgen::model::ops {
namespace {

constexpr float kMinWeightSum = 6.103515625e-5f;  // 2^-14, llama.cpp's clamp

// The `used` highest of `score(e)` over the experts, best first, into picks / kept; among equal
// scores the lower index stays first.
template <typename Score>
void TopExperts(int experts, int used, Score score, int* picks, float* kept) {
  // Insertion of each expert into the sorted picks (used is small: 2-8 of up to 1024).
  int filled = 0;
  for (int e = 0; e < experts; ++e) {
    const float p = score(e);
    if (filled == used && !(p > kept[used - 1])) continue;
    int at = filled < used ? filled++ : used - 1;
    // Strictly greater moves ahead: among equals the earlier (lower) index stays first.
    while (at > 0 && p > kept[at - 1]) {
      kept[at] = kept[at - 1];
      picks[at] = picks[at - 1];
      --at;
    }
    kept[at] = p;
    picks[at] = e;
  }
}

// The `used` experts of highest probability(e) (plus bias[e] when there is a bias: it moves the
// choice, not the weights), best first, into picks, and their probabilities into w.
template <typename Probability>
void ChooseExperts(int experts, int used, Probability probability, const float* bias, int* picks,
                   float* w) {
  if (bias == nullptr) {
    TopExperts(experts, used, probability, picks, w);
    return;
  }
  TopExperts(
      experts, used, [&](int e) { return probability(e) + bias[e]; }, picks, w);
  for (int i = 0; i < used; ++i) w[i] = probability(picks[i]);
}

// w /= sum(w), the sum clamped below as llama.cpp clamps it.
void Renormalize(float* w, int used) {
  float total = 0;
  for (int i = 0; i < used; ++i) total += w[i];
  total = std::max(total, kMinWeightSum);
  for (int i = 0; i < used; ++i) w[i] /= total;
}

}  // namespace

void RouteToExperts(const float* logits, int rows, int experts, int used, int* selected,
                    float* weights, ExpertWeighting weighting) {
  RouteToExperts(logits, rows, experts, used, selected, weights,
                 RoutingRule{.weighting = weighting});
}

void RouteToExperts(const float* logits, int rows, int experts, int used, int* selected,
                    float* weights, const RoutingRule& rule) {
  for (int r = 0; r < rows; ++r) {
    const float* row = logits + static_cast<size_t>(r) * experts;
    int* picks = selected + static_cast<size_t>(r) * used;
    float* w = weights + static_cast<size_t>(r) * used;
    switch (rule.weighting) {
      case ExpertWeighting::kSigmoid:
        ChooseExperts(
            experts, used, [&](int e) { return 1.0f / (1.0f + std::exp(-row[e])); },
            rule.selection_bias, picks, w);
        if (rule.renormalize) Renormalize(w, used);
        break;
      case ExpertWeighting::kSoftmaxOfChosen: {
        // Top-`used` by logit, then a softmax over the chosen logits (the first is their
        // maximum).
        ChooseExperts(
            experts, used, [&](int e) { return row[e]; }, rule.selection_bias, picks, w);
        const float max = w[0];
        float sum = 0;
        for (int i = 0; i < used; ++i) {
          w[i] = std::exp(w[i] - max);
          sum += w[i];
        }
        const float inverse = 1.0f / sum;
        for (int i = 0; i < used; ++i) w[i] *= inverse;
        break;
      }
      case ExpertWeighting::kRenormalizedSoftmax: {
        // Softmax, then top-`used` by probability: equal logits can round to equal
        // probabilities, so the choice is made on the probabilities, as llama.cpp makes it.
        float max = row[0];
        for (int e = 1; e < experts; ++e) max = std::max(max, row[e]);
        double sum = 0;
        for (int e = 0; e < experts; ++e) sum += std::exp(row[e] - max);
        const float inverse = static_cast<float>(1.0 / sum);
        ChooseExperts(
            experts, used, [&](int e) { return std::exp(row[e] - max) * inverse; },
            rule.selection_bias, picks, w);
        Renormalize(w, used);
        break;
      }
    }
    if (rule.scale != 1.0f) {
      for (int i = 0; i < used; ++i) w[i] *= rule.scale;
    }
  }
}

}  // namespace textgen::model::ops
