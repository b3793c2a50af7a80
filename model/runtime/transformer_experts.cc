// Transformer, part 4: the mixture-of-experts feed-forward (qwen3moe, gpt-oss, Mixtral-style
// llama, the hybrids' mixtures).
// Each token runs the few experts its router picks; the tokens of a batch are grouped by expert
// so that every expert's weights are read once per step, whatever number of its tokens.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "model/arch/architectures.h"
#include "model/base/status_macros.h"
#include "model/kernels/activations.h"
#include "model/kernels/expert_routing.h"
#include "model/runtime/transformer.h"
#include "model/runtime/weight_staging.h"

namespace textgen::model {
namespace {

// Batches of fewer tokens run all their experts' matrices in one parallel region.
constexpr int kGroupedExpertMaxRows = 32;

}  // namespace

absl::Status Transformer::PrepareExperts(const LayerWeights& lw, const std::string& prefix,
                                         PreparedLayer& pl, int max_rows, WeightStaging& staging) {
  const ModelConfig& c = config_;
  const int width = c.expert_hidden_dim;
  // Gated kinds run gate|up as one matmul; squared ReLU runs up alone.
  const bool gated = IsGatedFeedForward(SpecOf(c.architecture).feed_forward);
  const int up_rows = (gated ? 2 : 1) * width;
  pl.expert_selection_bias = ToFloatVector(lw.expert_selection_bias);
  TEXTGEN_ASSIGN_OR_RETURN(
      pl.router, MakeLinear(prefix + "ffn_gate_inp", {&lw.router}, ToFloatVector(lw.router_bias),
                            c.experts, c.dim, ops::LinearActivation::kNone, max_rows, staging));
  // Expert e's biases (gpt-oss), row e of each bias matrix: gate|up as its matmul's outputs.
  const bool biased = !lw.gate_experts_bias.empty();
  std::vector<float> up_bias(biased ? 2 * width : 0), down_bias(biased ? c.dim : 0);
  pl.expert_up.resize(c.experts);
  pl.expert_down.resize(c.experts);
  for (int e = 0; e < c.experts; ++e) {
    const TensorView gate = ExpertOf(lw.gate_experts, c.experts, e);
    const TensorView up = ExpertOf(lw.up_experts, c.experts, e);
    const TensorView down = ExpertOf(lw.down_experts, c.experts, e);
    if (biased) {
      ToFloat(RowsOf(lw.gate_experts_bias, e, 1), up_bias.data());
      ToFloat(RowsOf(lw.up_experts_bias, e, 1), up_bias.data() + width);
      ToFloat(RowsOf(lw.down_experts_bias, e, 1), down_bias.data());
    }
    const std::string name = absl::StrCat(prefix, "expert.", e, ".");
    TEXTGEN_ASSIGN_OR_RETURN(
        pl.expert_up[e], gated ? MakeLinear(name + "ffn_gate_up", {&gate, &up}, up_bias, up_rows,
                                            c.dim, ops::LinearActivation::kNone, max_rows, staging)
                               : MakeLinear(name + "ffn_up", {&up}, up_bias, up_rows, c.dim,
                                            ops::LinearActivation::kNone, max_rows, staging));
    TEXTGEN_ASSIGN_OR_RETURN(pl.expert_down[e],
                             MakeLinear(name + "ffn_down", {&down}, down_bias, c.dim, width,
                                        ops::LinearActivation::kNone, max_rows, staging));
    auto* up_kernel = dynamic_cast<ops::QuantizedLinear*>(pl.expert_up[e].get());
    auto* down_kernel = dynamic_cast<ops::QuantizedLinear*>(pl.expert_down[e].get());
    if (up_kernel != nullptr && down_kernel != nullptr) {
      pl.quantized_up.push_back(up_kernel);
      pl.quantized_down.push_back(down_kernel);
    }
  }
  if (static_cast<int>(pl.quantized_up.size()) != c.experts) {
    pl.quantized_up.clear();
    pl.quantized_down.clear();
  }
  if (c.shared_expert_hidden_dim > 0) {
    const int shared = c.shared_expert_hidden_dim;
    TEXTGEN_ASSIGN_OR_RETURN(
        pl.shared_up,
        gated ? MakeLinear(prefix + "ffn_gate_up_shexp", {&lw.shared_gate, &lw.shared_up}, {},
                           2 * shared, c.dim, ops::LinearActivation::kNone, max_rows, staging)
              : MakeLinear(prefix + "ffn_up_shexp", {&lw.shared_up}, {}, shared, c.dim,
                           ops::LinearActivation::kNone, max_rows, staging));
    TEXTGEN_ASSIGN_OR_RETURN(
        pl.shared_down, MakeLinear(prefix + "ffn_down_shexp", {&lw.shared_down}, {}, c.dim, shared,
                                   ops::LinearActivation::kNone, max_rows, staging));
    pl.shared_expert_gate = ToFloatVector(lw.shared_expert_gate);
  }
  return absl::OkStatus();
}

absl::Status Transformer::SharedExpert(PreparedLayer& pl, const float* mlp_x, int rows) {
  const ModelConfig& c = config_;
  const size_t dim = static_cast<size_t>(c.dim);
  const int width = c.shared_expert_hidden_dim;
  TEXTGEN_RETURN_IF_ERROR(pl.shared_up->Run(mlp_x, rows, shared_hidden_.data()));
  const float* act = shared_hidden_.data();
  if (ActivateExperts(shared_hidden_.data(), rows, width, shared_act_.data())) {
    act = shared_act_.data();
  }
  TEXTGEN_RETURN_IF_ERROR(pl.shared_down->Run(act, rows, shared_out_.data()));
  if (pl.shared_expert_gate.empty()) {
    // Added as is (Granite, Nemotron-H), after the routed sum as llama.cpp adds it.
    ops::AddInPlace(shared_out_.data(), static_cast<int64_t>(rows) * c.dim, proj_.data());
    return absl::OkStatus();
  }
  // proj_ += sigmoid(g . x) * shared, row by row (as llama.cpp: the routed sum, then this).
  for (int r = 0; r < rows; ++r) {
    const float* x = mlp_x + r * dim;
    float logit = 0.0f;
    for (size_t i = 0; i < dim; ++i) logit += pl.shared_expert_gate[i] * x[i];
    const float gate = 1.0f / (1.0f + std::exp(-logit));
    float* out = proj_.data() + r * dim;
    const float* shared = shared_out_.data() + r * dim;
    for (size_t i = 0; i < dim; ++i) out[i] += shared[i] * gate;
  }
  return absl::OkStatus();
}

bool Transformer::ActivateExperts(float* up, int rows, int width, float* out) const {
  switch (SpecOf(config_.architecture).feed_forward) {
    case FeedForwardKind::kSwiGluOai:
      ops::SwiGluOaiMul(up, rows, width, out);
      return true;
    case FeedForwardKind::kReluSquared:
      ops::ReluSquaredInPlace(static_cast<int64_t>(rows) * width, up);
      return false;
    case FeedForwardKind::kGeGlu:
      ops::GeluTanhMul(up, rows, width, out);
      return true;
    case FeedForwardKind::kSwiGlu:
    case FeedForwardKind::kGelu:  // no architecture with GPT-2's feed-forward allows experts
      break;
  }
  ops::SiluMul(up, rows, width, out);
  return true;
}

absl::Status Transformer::RunExperts(const std::vector<ops::QuantizedLinear*>& layers,
                                     const float* in, int in_width, float* out, int out_width) {
  expert_calls_.clear();
  for (int e = 0; e < config_.experts; ++e) {
    const int begin = expert_starts_[e], count = expert_starts_[e + 1] - begin;
    if (count == 0) continue;
    expert_calls_.push_back({layers[e], in + static_cast<size_t>(begin) * in_width, count,
                             out + static_cast<size_t>(begin) * out_width});
  }
  return ops::QuantizedLinear::RunMany(expert_calls_, expert_scratch_);
}

absl::Status Transformer::ExpertFeedForward(PreparedLayer& pl, const float* mlp_x, int rows) {
  const ModelConfig& c = config_;
  const int experts = c.experts, used = c.experts_used, width = c.expert_hidden_dim;
  const size_t dim = static_cast<size_t>(c.dim);
  const ArchitectureSpec& spec = SpecOf(c.architecture);
  TEXTGEN_RETURN_IF_ERROR(pl.router->Run(mlp_x, rows, router_logits_.data()));
  constexpr ops::ExpertWeighting kWeighting[] = {ops::ExpertWeighting::kRenormalizedSoftmax,
                                                 ops::ExpertWeighting::kSoftmaxOfChosen,
                                                 ops::ExpertWeighting::kSigmoid};
  const ops::RoutingRule rule{.weighting = kWeighting[static_cast<int>(c.expert_gating)],
                              .selection_bias = pl.expert_selection_bias.empty()
                                                    ? nullptr
                                                    : pl.expert_selection_bias.data(),
                              .renormalize = c.expert_weights_norm,
                              .scale = c.expert_weights_scale};
  ops::RouteToExperts(router_logits_.data(), rows, experts, used, selected_.data(),
                      expert_weights_.data(), rule);
  const int up_width = (IsGatedFeedForward(spec.feed_forward) ? 2 : 1) * width;

  // Group the (token, rank) pairs by expert, tokens in batch order (a counting sort).
  std::fill(expert_starts_.begin(), expert_starts_.end(), 0);
  const int pairs = rows * used;
  for (int i = 0; i < pairs; ++i) ++expert_starts_[selected_[i] + 1];
  for (int e = 0; e < experts; ++e) expert_starts_[e + 1] += expert_starts_[e];
  std::copy(expert_starts_.begin(), expert_starts_.end() - 1, expert_next_.begin());
  for (int i = 0; i < pairs; ++i) routed_[expert_next_[selected_[i]]++] = i;

  for (int j = 0; j < pairs; ++j) grouped_at_[routed_[j]] = j;
  // The input rows of pairs [begin, begin + count), in grouped order, from row `to` of expert_in_.
  const auto gather = [&](int begin, int count, int to) {
    for (int j = 0; j < count; ++j) {
      const int token = routed_[begin + j] / used;
      std::memcpy(expert_in_.data() + (to + j) * dim, mlp_x + token * dim, dim * sizeof(float));
    }
  };

  // Each expert over its tokens: the same kernels compute a row alike whatever the row count,
  // so a token's output does not depend on which other tokens share its experts. A few tokens
  // (decode) run every expert's matrix in one parallel region: per-call forks and joins cost
  // more than one expert's rows there. More tokens run expert by expert through the same small
  // buffers, hot in cache from gate|up to down (measured: a 128-token prefill through
  // per-pair buffers was 7-10% slower).
  float* hidden = expert_hidden_.data();
  float* act = expert_act_.data();
  if (!pl.quantized_up.empty() && rows < kGroupedExpertMaxRows) {
    gather(0, pairs, 0);
    TEXTGEN_RETURN_IF_ERROR(
        RunExperts(pl.quantized_up, expert_in_.data(), c.dim, hidden, up_width));
    const float* down_in = ActivateExperts(hidden, pairs, width, act) ? act : hidden;
    TEXTGEN_RETURN_IF_ERROR(
        RunExperts(pl.quantized_down, down_in, width, expert_out_.data(), c.dim));
  } else {
    for (int e = 0; e < experts; ++e) {
      const int begin = expert_starts_[e], count = expert_starts_[e + 1] - begin;
      if (count == 0) continue;
      gather(begin, count, 0);
      TEXTGEN_RETURN_IF_ERROR(pl.expert_up[e]->Run(expert_in_.data(), count, hidden));
      const float* down_in = ActivateExperts(hidden, count, width, act) ? act : hidden;
      TEXTGEN_RETURN_IF_ERROR(
          pl.expert_down[e]->Run(down_in, count, expert_out_.data() + begin * dim));
    }
  }
  // out = w_0 e_0 + w_1 e_1 + ..., products first, then added in rank order, as llama.cpp.
  for (int r = 0; r < rows; ++r) {
    float* out = proj_.data() + r * dim;
    const float* w = expert_weights_.data() + static_cast<size_t>(r) * used;
    const int* at = grouped_at_.data() + static_cast<size_t>(r) * used;
    const float* first = expert_out_.data() + at[0] * dim;
    for (size_t i = 0; i < dim; ++i) out[i] = w[0] * first[i];
    for (int k = 1; k < used; ++k) {
      const float* expert = expert_out_.data() + at[k] * dim;
      for (size_t i = 0; i < dim; ++i) out[i] += w[k] * expert[i];
    }
  }
  if (pl.shared_up != nullptr) return SharedExpert(pl, mlp_x, rows);
  return absl::OkStatus();
}

}  // namespace textgen::model
