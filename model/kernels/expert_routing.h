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
  // Each expert's own sigmoid probability (Nemotron-H, LFM2: llama.cpp's SIGMOID gating),
  // renormalized only when the rule says so.
  kSigmoid,
};

// The router's rule beyond its weighting (llama.cpp's build_moe_ffn arguments).
struct RoutingRule {
  ExpertWeighting weighting = ExpertWeighting::kRenormalizedSoftmax;
  // [experts] added to the probabilities to choose the experts, not to weigh them
  // (exp_probs_b: DeepSeek-V3-style load balancing); null: none.
  const float* selection_bias = nullptr;
  // kSigmoid: the chosen weights renormalized to sum to 1 (norm_w; softmax always is).
  bool renormalize = true;
  float scale = 1.0f;  // then every weight multiplied by this (w_scale)
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
// With a whole rule: kSigmoid picks the `used` experts of highest sigmoid(logit) + bias (ties to
// the lower index), weighs them by sigmoid(logit), renormalized when rule.renormalize (the sum
// clamped below at 2^-14, as llama.cpp); a selection bias moves the softmax picks likewise.
// Every weighting ends multiplied by rule.scale.
void RouteToExperts(const float* logits, int rows, int experts, int used, int* selected,
                    float* weights, const RoutingRule& rule);

}  // namespace textgen::model::ops
