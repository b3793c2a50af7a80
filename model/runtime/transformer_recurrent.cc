// Transformer, part 3: the recurrent layers of hybrid models (Gated DeltaNet, LFM2's short
// convolution, Mamba2), which mix positions through a state each sequence carries instead of
// attending over its K/V. Loading and the forward pass of such a layer; the kernels are
// model/kernels/causal_conv.h, gated_delta_net.h and selective_scan.h.

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/format/block_formats.h"
#include "model/kernels/activations.h"
#include "model/kernels/causal_conv.h"
#include "model/kernels/gated_delta_net.h"
#include "model/kernels/norms.h"
#include "model/kernels/selective_scan.h"
#include "model/runtime/transformer.h"

namespace textgen::model {
namespace {

// Channels per convolution task: enough work per task, and tasks enough for the threads.
constexpr int kConvChannelsPerTask = 256;

// ggml's softplus: x past 20 is returned as is (log(1 + e^x) == x in float there).
float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace

// The convolution, chunk by chunk (each continues its sequence's inputs from the state at the
// layer's offset), split by channels.
void Transformer::CausalConv(const PreparedLayer& pl, const BatchPlan& plan, const float* in,
                             int in_stride, int kernel, int channels, ops::ConvActivation act,
                             float* out) {
  const int chunks = static_cast<int>(plan.chunks.size());
  const int channel_tasks = (channels + kConvChannelsPerTask - 1) / kConvChannelsPerTask;
#pragma omp parallel for schedule(static) collapse(2)
  for (int i = 0; i < chunks; ++i) {
    for (int t = 0; t < channel_tasks; ++t) {
      const ops::AttentionChunk& chunk = plan.chunks[i];
      float* state = reinterpret_cast<float*>(plan.states[i]) + pl.state_offset;
      const int begin = t * kConvChannelsPerTask;
      const int end = std::min(channels, begin + kConvChannelsPerTask);
      ops::CausalConv(in + static_cast<size_t>(chunk.first_row) * in_stride, in_stride,
                      chunk.n_tokens, pl.ssm_conv.data(),
                      pl.ssm_conv_bias.empty() ? nullptr : pl.ssm_conv_bias.data(), kernel,
                      channels, begin, end, act, state,
                      out + static_cast<size_t>(chunk.first_row) * channels, channels);
    }
  }
}

namespace {

// [channels][kernel] in the file; [kernel][channels] for the kernel's vectors.
std::vector<float> ConvWeightsByTap(const TensorView& file_weights, int channels, int kernel) {
  const std::vector<float> conv = ToFloatVector(file_weights);
  std::vector<float> by_tap(conv.size());
  for (int ch = 0; ch < channels; ++ch) {
    for (int j = 0; j < kernel; ++j) {
      by_tap[static_cast<size_t>(j) * channels + ch] = conv[static_cast<size_t>(ch) * kernel + j];
    }
  }
  return by_tap;
}

}  // namespace

absl::Status Transformer::PrepareDeltaNet(const LayerWeights& lw, const std::string& p,
                                          PreparedLayer& pl, int max_rows, WeightStaging& staging) {
  const ModelConfig& c = config_;
  const DeltaNetShape& d = c.delta_net;
  // q|k|v and z in one matmul; beta and alpha (v_heads rows each) in another, since llama.cpp's
  // quantizer leaves those small matrices in a different type.
  std::vector<TensorView> qkvz_rows;  // a legacy ssm_in's rows as q | k | v | z
  std::vector<const TensorView*> in_parts = {&lw.ssm_input, &lw.ssm_gate};
  if (!lw.ssm_qkvz.empty()) {
    // Per key head q (dk rows), k (dk), v and z (r dv each, r = value heads per key head).
    const int64_t dk = d.head_k_dim, vz = int64_t{d.v_heads / d.k_heads} * d.head_v_dim;
    const int64_t group = 2 * dk + 2 * vz;
    const int64_t offsets[4] = {0, dk, 2 * dk, 2 * dk + vz}, sizes[4] = {dk, dk, vz, vz};
    for (int part = 0; part < 4; ++part) {
      for (int g = 0; g < d.k_heads; ++g) {
        qkvz_rows.push_back(RowsOf(lw.ssm_qkvz, g * group + offsets[part], sizes[part]));
      }
    }
    in_parts.clear();
    for (const TensorView& rows : qkvz_rows) in_parts.push_back(&rows);
  }
  auto in = MakeLinear(p + "ssm_in", in_parts, {}, d.conv_channels() + d.value_dim(), c.dim,
                       ops::LinearActivation::kNone, max_rows, staging);
  if (!in.ok()) return in.status();
  pl.ssm_in = std::move(*in);
  pl.beta_alpha_grouped = !lw.ssm_beta_alpha.empty();
  auto ba = pl.beta_alpha_grouped
                ? MakeLinear(p + "ssm_ba", {&lw.ssm_beta_alpha}, {}, 2 * d.v_heads, c.dim,
                             ops::LinearActivation::kNone, max_rows, staging)
                : MakeLinear(p + "ssm_ba", {&lw.ssm_beta, &lw.ssm_alpha}, {}, 2 * d.v_heads, c.dim,
                             ops::LinearActivation::kNone, max_rows, staging);
  if (!ba.ok()) return ba.status();
  pl.ssm_ba = std::move(*ba);
  auto out = MakeLinear(p + "ssm_out", {&lw.ssm_output}, {}, c.dim, d.value_dim(),
                        ops::LinearActivation::kNone, max_rows, staging);
  if (!out.ok()) return out.status();
  pl.ssm_out = std::move(*out);
  pl.ssm_conv = ConvWeightsByTap(lw.ssm_conv, d.conv_channels(), d.conv_kernel);
  pl.ssm_dt_bias = ToFloatVector(lw.ssm_dt_bias);
  pl.ssm_a = ToFloatVector(lw.ssm_a);
  pl.ssm_norm = ToFloatVector(lw.ssm_norm);
  return absl::OkStatus();
}

absl::Status Transformer::DeltaNet(PreparedLayer& pl, const float* in, const BatchPlan& plan) {
  const ModelConfig& c = config_;
  const DeltaNetShape& d = c.delta_net;
  const int rows = static_cast<int>(plan.tokens.size());
  const int chunks = static_cast<int>(plan.chunks.size());
  const int channels = d.conv_channels(), value_dim = d.value_dim();
  const int proj_width = channels + value_dim, vh = d.v_heads;
  TEXTGEN_RETURN_IF_ERROR(pl.ssm_in->Run(in, rows, ssm_proj_.data()));
  TEXTGEN_RETURN_IF_ERROR(pl.ssm_ba->Run(in, rows, ssm_ba_.data()));

  // Per token and value head: g = softplus(alpha + dt_bias) * a (a = -exp(A_log): a decay
  // exp(g) in (0, 1)) and beta = sigmoid(beta).
  // Head h's beta and alpha: at h and vh + h, or grouped per key head (r value heads each:
  // betas then alphas).
  const int per_key = vh / d.k_heads;
  const auto beta_at = [&](int h) {
    return pl.beta_alpha_grouped ? (h / per_key) * 2 * per_key + h % per_key : h;
  };
  const auto alpha_at = [&](int h) {
    return pl.beta_alpha_grouped ? beta_at(h) + per_key : vh + h;
  };
  for (int r = 0; r < rows; ++r) {
    const float* ba = ssm_ba_.data() + static_cast<size_t>(r) * 2 * vh;
    float* gb = ssm_gb_.data() + static_cast<size_t>(r) * 2 * vh;
    for (int h = 0; h < vh; ++h) {
      gb[h] = Softplus(ba[alpha_at(h)] + pl.ssm_dt_bias[h]) * pl.ssm_a[h];
      gb[vh + h] = 1.0f / (1.0f + std::exp(-ba[beta_at(h)]));
    }
  }

  const int64_t conv_state = int64_t{d.conv_kernel - 1} * channels;
  CausalConv(pl, plan, ssm_proj_.data(), proj_width, d.conv_kernel, channels,
             ops::ConvActivation::kSilu, ssm_conv_.data());
  // L2-normed q and k heads, row by row.
#pragma omp parallel for schedule(static) if (rows > 1)
  for (int r = 0; r < rows; ++r) {
    float* qk = ssm_conv_.data() + static_cast<size_t>(r) * channels;
    for (int h = 0; h < 2 * d.k_heads; ++h) {
      ops::L2NormInPlace(qk + h * d.head_k_dim, d.head_k_dim, c.norm_eps);
    }
  }
  // The gated delta rule: every (chunk, value head) on its own, tokens in order.
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.head_k_dim));
  const int64_t head_state = int64_t{d.head_v_dim} * d.head_k_dim;
#pragma omp parallel for schedule(static) collapse(2)
  for (int i = 0; i < chunks; ++i) {
    for (int h = 0; h < vh; ++h) {
      const ops::AttentionChunk& chunk = plan.chunks[i];
      const size_t row = static_cast<size_t>(chunk.first_row);
      const int kh = d.key_head(h);
      const float* qkv = ssm_conv_.data() + row * channels;
      float* state =
          reinterpret_cast<float*>(plan.states[i]) + pl.state_offset + conv_state + h * head_state;
      ops::GatedDeltaRuleHead(qkv + kh * d.head_k_dim, qkv + d.key_dim() + kh * d.head_k_dim,
                              channels, qkv + 2 * d.key_dim() + h * d.head_v_dim, channels,
                              ssm_gb_.data() + row * 2 * vh + h,
                              ssm_gb_.data() + row * 2 * vh + vh + h, 2 * vh, chunk.n_tokens,
                              d.head_k_dim, d.head_v_dim, scale, state,
                              ssm_core_.data() + row * value_dim + h * d.head_v_dim, value_dim);
    }
  }
  // Each head RMS-normed, times silu(z); then the output projection.
  for (int r = 0; r < rows; ++r) {
    float* core = ssm_core_.data() + static_cast<size_t>(r) * value_dim;
    ops::RmsNorm(core, vh, d.head_v_dim, pl.ssm_norm.data(), c.norm_eps, core);
    const float* z = ssm_proj_.data() + static_cast<size_t>(r) * proj_width + channels;
    ops::MulSiluInPlace(z, value_dim, core);
  }
  return pl.ssm_out->Run(ssm_core_.data(), rows, proj_.data());
}

absl::Status Transformer::PrepareShortConv(const LayerWeights& lw, const std::string& p,
                                           PreparedLayer& pl, int max_rows,
                                           WeightStaging& staging) {
  const int dim = config_.dim;
  auto in = MakeLinear(p + "shortconv_in", {&lw.ssm_input}, {}, 3 * dim, dim,
                       ops::LinearActivation::kNone, max_rows, staging);
  if (!in.ok()) return in.status();
  pl.ssm_in = std::move(*in);
  auto out = MakeLinear(p + "shortconv_out", {&lw.ssm_output}, {}, dim, dim,
                        ops::LinearActivation::kNone, max_rows, staging);
  if (!out.ok()) return out.status();
  pl.ssm_out = std::move(*out);
  pl.ssm_conv = ConvWeightsByTap(lw.ssm_conv, dim, config_.short_conv_kernel);
  return absl::OkStatus();
}

absl::Status Transformer::ShortConv(PreparedLayer& pl, const float* in, const BatchPlan& plan) {
  const int dim = config_.dim;
  const int rows = static_cast<int>(plan.tokens.size());
  // b | c | x per token; the convolution runs over b * x, and c gates its output.
  TEXTGEN_RETURN_IF_ERROR(pl.ssm_in->Run(in, rows, ssm_proj_.data()));
  float* bx = ssm_core_.data();
#pragma omp parallel for schedule(static) if (rows > 1)
  for (int r = 0; r < rows; ++r) {
    const float* bcx = ssm_proj_.data() + static_cast<size_t>(r) * 3 * dim;
    float* out = bx + static_cast<size_t>(r) * dim;
    for (int i = 0; i < dim; ++i) out[i] = bcx[i] * bcx[2 * dim + i];
  }
  CausalConv(pl, plan, bx, dim, config_.short_conv_kernel, dim, ops::ConvActivation::kNone,
             ssm_conv_.data());
#pragma omp parallel for schedule(static) if (rows > 1)
  for (int r = 0; r < rows; ++r) {
    const float* c = ssm_proj_.data() + static_cast<size_t>(r) * 3 * dim + dim;
    const float* conv = ssm_conv_.data() + static_cast<size_t>(r) * dim;
    float* y = bx + static_cast<size_t>(r) * dim;
    for (int i = 0; i < dim; ++i) y[i] = c[i] * conv[i];
  }
  return pl.ssm_out->Run(bx, rows, proj_.data());
}

absl::Status Transformer::PrepareMamba2(const LayerWeights& lw, const std::string& p,
                                        PreparedLayer& pl, int max_rows, WeightStaging& staging) {
  const ModelConfig& c = config_;
  const Mamba2Shape& m = c.mamba2;
  TEXTGEN_ASSIGN_OR_RETURN(pl.ssm_in,
                           MakeLinear(p + "ssm_in", {&lw.ssm_input}, {}, m.in_rows(), c.dim,
                                      ops::LinearActivation::kNone, max_rows, staging));
  TEXTGEN_ASSIGN_OR_RETURN(pl.ssm_out,
                           MakeLinear(p + "ssm_out", {&lw.ssm_output}, {}, c.dim, m.inner,
                                      ops::LinearActivation::kNone, max_rows, staging));
  pl.ssm_conv = ConvWeightsByTap(lw.ssm_conv, m.conv_channels(), m.conv_kernel);
  pl.ssm_conv_bias = ToFloatVector(lw.ssm_conv_bias);
  pl.ssm_dt_bias = ToFloatVector(lw.ssm_dt_bias);
  pl.ssm_a = ToFloatVector(lw.ssm_a);
  pl.ssm_d = ToFloatVector(lw.ssm_d);
  pl.ssm_norm = ToFloatVector(lw.ssm_norm);
  return absl::OkStatus();
}

absl::Status Transformer::Mamba2(PreparedLayer& pl, const float* in, const BatchPlan& plan) {
  const ModelConfig& c = config_;
  const Mamba2Shape& m = c.mamba2;
  const int rows = static_cast<int>(plan.tokens.size());
  const int chunks = static_cast<int>(plan.chunks.size());
  const int inner = m.inner, channels = m.conv_channels(), heads = m.heads;
  const int proj_width = m.in_rows(), head_dim = m.head_dim();
  // z | x B C | dt per token.
  TEXTGEN_RETURN_IF_ERROR(pl.ssm_in->Run(in, rows, ssm_proj_.data()));
  // Per token and head: the step dt = softplus(dt + dt_bias) and the decay exp(dt A)
  // (A = -exp(A_log) < 0).
  for (int r = 0; r < rows; ++r) {
    const float* dt = ssm_proj_.data() + static_cast<size_t>(r) * proj_width + inner + channels;
    float* step = ssm_gb_.data() + static_cast<size_t>(r) * 2 * heads;
    for (int h = 0; h < heads; ++h) {
      step[h] = Softplus(dt[h] + pl.ssm_dt_bias[h]);
      step[heads + h] = std::exp(step[h] * pl.ssm_a[h]);
    }
  }
  CausalConv(pl, plan, ssm_proj_.data() + inner, proj_width, m.conv_kernel, channels,
             ops::ConvActivation::kSilu, ssm_conv_.data());
  // The scan: every (chunk, head) on its own, tokens in order.
  const int64_t conv_state = int64_t{m.conv_kernel - 1} * channels;
  const int64_t head_state = int64_t{head_dim} * m.state;
#pragma omp parallel for schedule(static) collapse(2)
  for (int i = 0; i < chunks; ++i) {
    for (int h = 0; h < heads; ++h) {
      const ops::AttentionChunk& chunk = plan.chunks[i];
      const size_t row = static_cast<size_t>(chunk.first_row);
      const float* xbc = ssm_conv_.data() + row * channels;
      const float* b = xbc + inner + m.group_of(h) * m.state;
      float* state =
          reinterpret_cast<float*>(plan.states[i]) + pl.state_offset + conv_state + h * head_state;
      const float* step = ssm_gb_.data() + row * 2 * heads;
      ops::SelectiveScanHead(xbc + h * head_dim, channels, b, b + m.bc_width(), channels, step + h,
                             step + heads + h, 2 * heads, pl.ssm_d[h], chunk.n_tokens, head_dim,
                             m.state, state, ssm_core_.data() + row * inner + h * head_dim, inner);
    }
  }
  // y * silu(z), RMS-normed group by group (each group its own weights); then out_proj.
  const int group_width = inner / m.groups;
#pragma omp parallel for schedule(static) if (rows > 1)
  for (int r = 0; r < rows; ++r) {
    float* y = ssm_core_.data() + static_cast<size_t>(r) * inner;
    ops::MulSiluInPlace(ssm_proj_.data() + static_cast<size_t>(r) * proj_width, inner, y);
    for (int g = 0; g < m.groups; ++g) {
      float* part = y + static_cast<size_t>(g) * group_width;
      ops::RmsNorm(part, 1, group_width, pl.ssm_norm.data() + static_cast<size_t>(g) * group_width,
                   c.norm_eps, part);
    }
  }
  return pl.ssm_out->Run(ssm_core_.data(), rows, proj_.data());
}

}  // namespace textgen::model
