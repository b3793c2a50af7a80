#pragma once

// Mixture-of-experts routing: which experts each token runs, and with which weights.
// Stateless; any thread.

namespace textgen::model::ops {

// How the chosen experts' outputs are weighted.
enum class ExpertWeighting {
  // Their softmax probabilities over every expert, renormalized to sum to 1 (qwen3moe, Mixtral).
  kRenormalizedSoftmax,
  // A softmax over their own logits (gpt-oss: llama.cpp's SOFTMAX_WEIGHT gating).
  kSoftmaxOfChosen,
};

// For each of `rows` tokens, from its router scores (`logits`, [rows, experts]): the `used`
// experts of highest softmax probability, best first, in `selected` [rows, used], and their
// probabilities renormalized to sum to 1 in `weights` [rows, used]. As llama.cpp's
// build_moe_ffn with softmax gating and norm_w: the sum is clamped below at 2^-14 (the
// smallest normal half). Ties go to the lower expert index (llama.cpp sorts with std::sort,
// which keeps index order for up to 16 experts). Row by row: batch-invariant.
// kSoftmaxOfChosen picks the same experts by their logits (the order is the same) and weighs
// them by a softmax over those `used` logits, as llama.cpp does for gpt-oss.
void RouteToExperts(const float* logits, int rows, int experts, int used, int* selected,
                    float* weights,
                    ExpertWeighting weighting = ExpertWeighting::kRenormalizedSoftmax);

}  // namespace textgen::model::ops
