// Transformer, part 3: the mixture-of-experts feed-forward (qwen3moe, Mixtral-style llama).
// Each token runs the few experts its router picks; the tokens of a batch are grouped by expert
// so that every expert's weights are read once per step, whatever number of its tokens.

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/kernels/activations.h"
#include "model/kernels/expert_routing.h"
#include "model/runtime/transformer.h"
#include "model/runtime/weight_staging.h"

namespace textgen::model {

absl::Status Transformer::PrepareExperts(const LayerWeights& lw, const std::string& prefix,
                                         PreparedLayer& pl, int max_rows, WeightStaging& staging) {
  const ModelConfig& c = config_;
  const int width = c.expert_hidden_dim;
  TEXTGEN_ASSIGN_OR_RETURN(pl.router,
                           MakeLinear(prefix + "ffn_gate_inp", {&lw.router}, {}, c.experts, c.dim,
                                      ops::LinearActivation::kNone, max_rows, staging));
  pl.expert_up.resize(c.experts);
  pl.expert_down.resize(c.experts);
  for (int e = 0; e < c.experts; ++e) {
    const TensorView gate = ExpertOf(lw.gate_experts, c.experts, e);
    const TensorView up = ExpertOf(lw.up_experts, c.experts, e);
    const TensorView down = ExpertOf(lw.down_experts, c.experts, e);
    const std::string name = absl::StrCat(prefix, "expert.", e, ".");
    TEXTGEN_ASSIGN_OR_RETURN(pl.expert_up[e],
                             MakeLinear(name + "ffn_gate_up", {&gate, &up}, {}, 2 * width, c.dim,
                                        ops::LinearActivation::kNone, max_rows, staging));
    TEXTGEN_ASSIGN_OR_RETURN(pl.expert_down[e],
                             MakeLinear(name + "ffn_down", {&down}, {}, c.dim, width,
                                        ops::LinearActivation::kNone, max_rows, staging));
  }
  return absl::OkStatus();
}

absl::Status Transformer::ExpertFeedForward(PreparedLayer& pl, const float* mlp_x, int rows) {
  const ModelConfig& c = config_;
  const int experts = c.experts, used = c.experts_used, width = c.expert_hidden_dim;
  const size_t dim = static_cast<size_t>(c.dim);
  TEXTGEN_RETURN_IF_ERROR(pl.router->Run(mlp_x, rows, router_logits_.data()));
  ops::RouteToExperts(router_logits_.data(), rows, experts, used, selected_.data(),
                      expert_weights_.data());

  // Group the (token, rank) pairs by expert, tokens in batch order (a counting sort).
  std::fill(expert_starts_.begin(), expert_starts_.end(), 0);
  const int pairs = rows * used;
  for (int i = 0; i < pairs; ++i) ++expert_starts_[selected_[i] + 1];
  for (int e = 0; e < experts; ++e) expert_starts_[e + 1] += expert_starts_[e];
  std::copy(expert_starts_.begin(), expert_starts_.end() - 1, expert_next_.begin());
  for (int i = 0; i < pairs; ++i) routed_[expert_next_[selected_[i]]++] = i;

  // Each expert over its tokens: the same kernels compute a row alike whatever the row count,
  // so a token's output does not depend on which other tokens share its experts.
  for (int e = 0; e < experts; ++e) {
    const int begin = expert_starts_[e], count = expert_starts_[e + 1] - begin;
    if (count == 0) continue;
    for (int j = 0; j < count; ++j) {
      const int token = routed_[begin + j] / used;
      std::memcpy(expert_in_.data() + j * dim, mlp_x + token * dim, dim * sizeof(float));
    }
    TEXTGEN_RETURN_IF_ERROR(pl.expert_up[e]->Run(expert_in_.data(), count, hidden_.data()));
    ops::SiluMul(hidden_.data(), count, width, act_.data());
    TEXTGEN_RETURN_IF_ERROR(pl.expert_down[e]->Run(act_.data(), count, expert_out_.data()));
    for (int j = 0; j < count; ++j) {
      std::memcpy(ranked_out_.data() + routed_[begin + j] * dim, expert_out_.data() + j * dim,
                  dim * sizeof(float));
    }
  }
  // out = w_0 e_0 + w_1 e_1 + ..., products first, then added in rank order, as llama.cpp.
  for (int r = 0; r < rows; ++r) {
    float* out = proj_.data() + r * dim;
    const float* w = expert_weights_.data() + static_cast<size_t>(r) * used;
    const float* ranked = ranked_out_.data() + static_cast<size_t>(r) * used * dim;
    for (size_t i = 0; i < dim; ++i) out[i] = w[0] * ranked[i];
    for (int k = 1; k < used; ++k) {
      const float* expert = ranked + k * dim;
      for (size_t i = 0; i < dim; ++i) out[i] += w[k] * expert[i];
    }
  }
  return absl::OkStatus();
}

}  // namespace textgen::model
