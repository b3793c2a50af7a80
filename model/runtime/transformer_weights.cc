// Transformer, part 1: loading. Checks the weights against the configuration, dequantizes or
// repacks them once, and builds the per-layer linear layers (the forward pass is in
// transformer.cc).

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "model/arch/architectures.h"
#include "model/arch/tensor_table.h"
#include "model/base/status_macros.h"
#include "model/format/block_formats.h"
#include "model/kernels/activations.h"
#include "model/kernels/norms.h"
#include "model/runtime/transformer.h"
#include "model/runtime/weight_staging.h"

namespace textgen::model {
namespace {

const ArchitectureSpec& Spec(const ModelConfig& c) { return SpecOf(c.architecture); }
bool HasRope(const ModelConfig& c) { return !Spec(c).learned_positions && c.rope; }
// SwiGLU and GeGLU: gate and up in one matmul, then act(gate) * up.
bool IsGated(const ModelConfig& c) { return IsGatedFeedForward(Spec(c).feed_forward); }

// Checks that `t` is present with the expected shape; names it in the error.
absl::Status Expect(const TensorView& t, const std::string& name, int64_t rows, int64_t cols) {
  if (t.empty()) return absl::InvalidArgumentError(absl::StrCat("tensor ", name, " is missing"));
  if (t.rows * t.cols != rows * cols || t.cols != cols) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", name, ": expected ", rows, "x", cols,
                                                   ", got ", t.rows, "x", t.cols));
  }
  return absl::OkStatus();
}

// Every weight the architecture's tensor table lists, in the logical (unfused) layout:
// required ones present, present ones the right shape.
absl::Status CheckWeights(const ModelWeights& w, const ModelConfig& c) {
  if (static_cast<int>(w.layers.size()) != c.n_layers) {
    return absl::InvalidArgumentError(absl::StrCat("model has ", w.layers.size(),
                                                   " layers of weights, config says ", c.n_layers));
  }
  const auto check = [&w](const TensorEntry& entry) {
    const TensorView& view = WeightOf(w, entry.layer, entry.parts.front().slot);
    if (view.empty() && !entry.required) return absl::OkStatus();
    return Expect(view, entry.name, entry.total_rows(), entry.cols);
  };
  const ArchitectureSpec& spec = Spec(c);
  for (const TensorEntry& entry : GlobalTensorTable(spec, c)) {
    TEXTGEN_RETURN_IF_ERROR(check(entry));
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = w.layers[l];
    const TensorLayout loaded{.fused_beta_alpha = !lw.ssm_beta_alpha.empty(),
                              .fused_qkvz = !lw.ssm_qkvz.empty()};
    for (const TensorEntry& entry : LayerTensorTable(spec, c, l, loaded)) {
      TEXTGEN_RETURN_IF_ERROR(check(entry));
    }
    if (lw.bq.empty() != lw.bk.empty() || lw.bq.empty() != lw.bv.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("block ", l, " has some but not all of the Q, K and V biases"));
    }
  }
  return absl::OkStatus();
}

// Per-row widths of the recurrent layers' scratch: the widest of the model's recurrent layer
// kinds (all 0 without recurrent layers).
struct RecurrentWidths {
  int64_t proj = 0, ba = 0, conv = 0, core = 0;
};
RecurrentWidths RecurrentWidthsOf(const ModelConfig& c) {
  RecurrentWidths w;
  const DeltaNetShape& d = c.delta_net;
  for (int l = 0; l < c.n_layers; ++l) {
    switch (c.mixer(l)) {
      case LayerMixer::kGatedDeltaNet:
        w.proj = std::max<int64_t>(w.proj, d.conv_channels() + d.value_dim());
        w.ba = std::max<int64_t>(w.ba, 2 * d.v_heads);
        w.conv = std::max<int64_t>(w.conv, d.conv_channels());
        w.core = std::max<int64_t>(w.core, d.value_dim());
        break;
      case LayerMixer::kShortConv:
        w.proj = std::max<int64_t>(w.proj, 3 * int64_t{c.dim});
        w.conv = std::max<int64_t>(w.conv, c.dim);
        w.core = std::max<int64_t>(w.core, c.dim);
        break;
      case LayerMixer::kMamba2:
        // ba: each head's step and decay.
        w.proj = std::max<int64_t>(w.proj, c.mamba2.in_rows());
        w.ba = std::max<int64_t>(w.ba, 2 * c.mamba2.heads);
        w.conv = std::max<int64_t>(w.conv, c.mamba2.conv_channels());
        w.core = std::max<int64_t>(w.core, c.mamba2.inner);
        break;
      case LayerMixer::kAttention:
      case LayerMixer::kNone:
        break;
    }
  }
  return w;
}

// Whether `parts` become one QuantizedLinear (kept quantized) rather than a oneDNN Linear.
bool UsesQuantizedKernels(bool enabled, std::initializer_list<const TensorView*> parts) {
  return enabled && ops::QuantizedLinear::Supports(
                        std::span<const TensorView* const>(parts.begin(), parts.size()));
}

absl::Status ValidateConfig(const ModelConfig& c) {
  if (c.dim <= 0 || c.hidden_dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 ||
      c.head_dim <= 0 || c.vocab_size <= 0 || c.context_length <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model config has a non-positive size: dim=", c.dim, " hidden_dim=", c.hidden_dim,
        " n_layers=", c.n_layers, " n_heads=", c.n_heads, " n_kv_heads=", c.n_kv_heads,
        " head_dim=", c.head_dim, " vocab=", c.vocab_size, " context=", c.context_length));
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("n_heads ", c.n_heads, " is not a multiple of n_kv_heads ", c.n_kv_heads));
  }
  if (!c.sliding_window_layers.empty() &&
      (static_cast<int>(c.sliding_window_layers.size()) != c.n_layers || c.sliding_window <= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sliding_window_layers has ", c.sliding_window_layers.size(), " entries for ",
                     c.n_layers, " layers (window ", c.sliding_window, ")"));
  }
  if (HasRope(c)) {
    const int rope_dim = c.rope_dim > 0 ? c.rope_dim : c.head_dim;
    if (rope_dim % 2 != 0 || rope_dim > c.head_dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("rope_dim must be even and <= head_dim ", c.head_dim, ", got ", rope_dim));
    }
    if (!c.rope_freq_factors.empty() &&
        static_cast<int>(c.rope_freq_factors.size()) != rope_dim / 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("rope_freq_factors has ", c.rope_freq_factors.size(),
                       " entries, expected rope_dim / 2 = ", rope_dim / 2));
    }
  }
  return absl::OkStatus();
}

}  // namespace

// ============================================================================
// Loading: dequantize, concatenate QKV (and gate|up), reorder for oneDNN once
// ============================================================================

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::Create(
    const ModelConfig& config, const ModelWeights& weights,
    std::shared_ptr<const WeightStorage> storage, const TransformerOptions& options) {
  const int max_batch_tokens = options.max_batch_tokens;
  TEXTGEN_RETURN_IF_ERROR(ValidateConfig(config));
  if (storage == nullptr) {
    return absl::InvalidArgumentError("Transformer::Create: the weights' storage is null");
  }
  if (max_batch_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch_tokens must be > 0, got ", max_batch_tokens));
  }
  std::unique_ptr<Transformer> t(new Transformer(config));
  t->storage_ = std::move(storage);
  const ModelConfig& c = t->config_;
  t->max_rows_ = max_batch_tokens;
  t->q_dim_ = c.n_heads * c.head_dim;
  t->kv_dim_ = c.kv_dim();
  t->qkv_dim_ = t->q_dim_ + 2 * t->kv_dim_;
  const int widest =
      std::max({c.dim, t->q_dim_, c.ffn_width(), c.has_dense_layers() ? c.hidden_dim : 0,
                c.delta_net.value_dim(), c.mamba2.inner, c.shared_expert_hidden_dim});
  auto context =
      ops::OnednnContext::Create(options.threads, options.bf16, max_batch_tokens, widest);
  if (!context.ok()) return context.status();
  t->context_ = std::move(*context);
  t->quantized_kernels_ = options.quantized_kernels;
  if (options.skinny_max_rows >= 0) t->context_->set_skinny_max_rows(options.skinny_max_rows);
  if (HasRope(c)) {
    const int rope_dim = c.rope_dim > 0 ? c.rope_dim : c.head_dim;
    t->rope_ = std::make_unique<ops::Rope>(c.context_length, c.head_dim, rope_dim, c.rope_theta,
                                           c.rope_layout, c.rope_freq_factors, c.rope_freq_scale,
                                           c.rope_attn_factor, c.rope_yarn_original_context);
    if (!c.sliding_window_layers.empty() &&
        (c.rope_theta_local != c.rope_theta || c.rope_freq_scale_local != c.rope_freq_scale)) {
      t->local_rope_ = std::make_unique<ops::Rope>(
          c.context_length, c.head_dim, rope_dim, c.rope_theta_local, c.rope_layout,
          c.rope_freq_factors, c.rope_freq_scale_local, c.rope_attn_factor,
          c.rope_yarn_original_context);  // llama.cpp's YaRN applies to every layer
    }
  }
  TEXTGEN_RETURN_IF_ERROR(t->PrepareWeights(weights, max_batch_tokens));

  const size_t rows = static_cast<size_t>(max_batch_tokens);
  t->x_.resize(rows * c.dim);
  t->xn_.resize(rows * c.dim);
  t->qkv_.resize(rows * t->qkv_dim_);
  if (Spec(c).attention_output_gate) {
    t->gated_qkv_.resize(rows * (t->qkv_dim_ + t->q_dim_));
    t->attn_gate_.resize(rows * t->q_dim_);
  }
  const RecurrentWidths widths = RecurrentWidthsOf(c);
  t->ssm_proj_.resize(rows * widths.proj);
  t->ssm_ba_.resize(rows * widths.ba);
  t->ssm_conv_.resize(rows * widths.conv);
  t->ssm_gb_.resize(rows * widths.ba);
  t->ssm_core_.resize(rows * widths.core);
  t->att_.resize(rows * t->q_dim_);
  t->proj_.resize(rows * c.dim);
  if (c.has_dense_layers()) {
    t->hidden_.resize(rows * 2 * c.hidden_dim);
    if (IsGated(c)) t->act_.resize(rows * c.hidden_dim);
  }
  if (c.has_experts()) {
    const size_t pairs = rows * c.experts_used, width = c.expert_hidden_dim;
    t->router_logits_.resize(rows * c.experts);
    t->selected_.resize(pairs);
    t->expert_weights_.resize(pairs);
    t->routed_.resize(pairs);
    t->grouped_at_.resize(pairs);
    t->expert_starts_.resize(c.experts + 1);
    t->expert_next_.resize(c.experts);
    t->expert_in_.resize(pairs * c.dim);
    t->expert_hidden_.resize(pairs * 2 * width);
    t->expert_act_.resize(pairs * width);
    t->expert_out_.resize(pairs * c.dim);
    t->expert_scratch_.resize(c.experts);
    t->expert_calls_.reserve(c.experts);
    if (c.shared_expert_hidden_dim > 0) {
      t->shared_hidden_.resize(rows * 2 * c.shared_expert_hidden_dim);
      t->shared_act_.resize(rows * c.shared_expert_hidden_dim);
      t->shared_out_.resize(rows * c.dim);
    }
  }
  t->scores_.resize(
      static_cast<size_t>(ops::AttentionScratchFloats(t->context_->threads(), c.context_length)));
  return t;
}

int64_t Transformer::MemoryNeeded(const ModelConfig& c, const ModelWeights& weights,
                                  const TransformerOptions& options) {
  const int64_t q_dim = int64_t{c.n_heads} * c.head_dim;
  const int64_t kv_dim = c.kv_dim();
  const int64_t qkv_dim = q_dim + 2 * kv_dim;
  const int64_t width = c.ffn_width();
  const int64_t up_factor = IsGated(c) ? 2 : 1;
  // The dense feed-forward's gate|up and activation rows.
  const int64_t dense_rows =
      c.has_dense_layers() ? (IsGated(c) ? 3 : 1) * int64_t{c.hidden_dim} : 0;
  const int64_t weight_bytes = options.bf16 ? 2 : 4;
  // Each Linear: its packed size, and what staging it for oneDNN takes (none when quantized).
  int64_t packed = 0, layer_staging = 0;
  const auto add = [&](std::initializer_list<const TensorView*> parts, int64_t n, int64_t k) {
    if (UsesQuantizedKernels(options.quantized_kernels, parts)) {
      for (const TensorView* p : parts) {
        const int64_t panels = (p->rows + ops::kQuantPanelColumns - 1) / ops::kQuantPanelColumns;
        packed += panels * (p->cols / FormatOf(p->dtype).block_elements) *
                  ops::PackedBlockBytes(p->dtype);
      }
      return;
    }
    packed += n * k * weight_bytes;
    layer_staging = std::max(layer_staging, n * k * weight_bytes);
  };
  const bool have_layers = static_cast<int>(weights.layers.size()) == c.n_layers;
  for (int l = 0; l < c.n_layers; ++l) {
    static const LayerWeights kAbsent;
    const LayerWeights& lw = have_layers ? weights.layers[l] : kAbsent;
    const DeltaNetShape& d = c.delta_net;
    switch (c.mixer(l)) {
      case LayerMixer::kGatedDeltaNet:
        if (lw.ssm_qkvz.empty()) {
          add({&lw.ssm_input, &lw.ssm_gate}, d.conv_channels() + d.value_dim(), c.dim);
        } else {
          add({&lw.ssm_qkvz}, d.conv_channels() + d.value_dim(), c.dim);
        }
        if (lw.ssm_beta_alpha.empty()) {
          add({&lw.ssm_beta, &lw.ssm_alpha}, 2 * d.v_heads, c.dim);
        } else {
          add({&lw.ssm_beta_alpha}, 2 * d.v_heads, c.dim);
        }
        add({&lw.ssm_output}, c.dim, d.value_dim());
        break;
      case LayerMixer::kShortConv:
        add({&lw.ssm_input}, 3 * int64_t{c.dim}, c.dim);
        add({&lw.ssm_output}, c.dim, c.dim);
        break;
      case LayerMixer::kMamba2:
        add({&lw.ssm_input}, c.mamba2.in_rows(), c.dim);
        add({&lw.ssm_output}, c.dim, c.mamba2.inner);
        break;
      case LayerMixer::kAttention:
        add({&lw.wq, &lw.wk, &lw.wv}, qkv_dim + (Spec(c).attention_output_gate ? q_dim : 0), c.dim);
        add({&lw.wo}, c.dim, q_dim);
        break;
      case LayerMixer::kNone:
        break;
    }
    if (!c.has_feed_forward(l)) continue;
    if (c.layer_has_experts(l)) {
      add({&lw.router}, c.experts, c.dim);
      for (int e = 0; e < c.experts; ++e) {
        const TensorView up = ExpertOf(lw.up_experts, c.experts, e);
        const TensorView down = ExpertOf(lw.down_experts, c.experts, e);
        if (IsGated(c)) {
          const TensorView gate = ExpertOf(lw.gate_experts, c.experts, e);
          add({&gate, &up}, up_factor * width, c.dim);
        } else {
          add({&up}, width, c.dim);
        }
        add({&down}, c.dim, width);
      }
      const int64_t shared = c.shared_expert_hidden_dim;
      if (shared > 0 && IsGated(c)) {
        add({&lw.shared_gate, &lw.shared_up}, 2 * shared, c.dim);
      } else if (shared > 0) {
        add({&lw.shared_up}, shared, c.dim);
      }
      if (shared > 0) add({&lw.shared_down}, c.dim, shared);
    } else if (IsGated(c)) {
      add({&lw.w_gate, &lw.w_up}, 2 * int64_t{c.hidden_dim}, c.dim);
      add({&lw.w_down}, c.dim, c.hidden_dim);
    } else {
      add({&lw.w_up}, c.hidden_dim, c.dim);
      add({&lw.w_down}, c.dim, c.hidden_dim);
    }
  }
  const bool lm_head = !Spec(c).encoder;
  const int64_t head = lm_head ? int64_t{c.vocab_size} * c.dim : 0;
  const TensorView& out = weights.output.empty() ? weights.token_embedding : weights.output;
  const int64_t before_head = packed;
  if (lm_head) add({&out}, c.vocab_size, c.dim);
  // PrepareWeights stages one layer matrix at a time and the head in blocks of ~4M values.
  const int64_t head_block = lm_head && packed - before_head == head * weight_bytes
                                 ? std::min(head, int64_t{1} << 22) * (weight_bytes + 4)
                                 : 0;
  const int64_t weights_peak = packed + std::max(layer_staging, head_block);
  const int64_t rows = options.max_batch_tokens;
  const int64_t positions = Spec(c).learned_positions ? int64_t{c.context_length} * c.dim : 0;
  const int64_t threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  // Experts: router scores, and per (token, expert) pair its indices, input, gate|up,
  // activation and output rows.
  const int64_t experts =
      c.has_experts() ? c.experts + int64_t{c.experts_used} * (4 + 2 * int64_t{c.dim} + 3 * width) +
                            3 * int64_t{c.shared_expert_hidden_dim} + c.dim
                      : 0;
  // Hybrids: the gated q rows, and the recurrent layers' projections and outputs.
  const int64_t gated = Spec(c).attention_output_gate ? qkv_dim + 2 * q_dim : 0;
  const RecurrentWidths widths = RecurrentWidthsOf(c);
  const int64_t recurrent = widths.proj + 2 * widths.ba + widths.conv + widths.core;
  const int64_t activations = rows * (3 * int64_t{c.dim} + qkv_dim + q_dim + dense_rows + experts +
                                      gated + recurrent + (lm_head ? c.vocab_size : 0)) +
                              threads * c.context_length + positions;
  return weights_peak + activations * static_cast<int64_t>(sizeof(float));
}

absl::StatusOr<std::unique_ptr<ops::LinearLayer>> Transformer::MakeLinear(
    const std::string& name, std::span<const TensorView* const> parts,
    const std::vector<float>& bias, int n, int k, ops::LinearActivation act, int max_rows,
    WeightStaging& staging) {
  const float* bias_data = bias.empty() ? nullptr : bias.data();
  if (quantized_kernels_ && ops::QuantizedLinear::Supports(parts)) {
    auto layer = ops::QuantizedLinear::Create(name, parts, bias_data, act, max_rows, quant_weights_,
                                              quant_scratch_);
    if (!layer.ok()) return layer.status();
    for (const TensorView* p : parts) storage_->DoneReading(p->data, ByteSize(*p));
    return std::unique_ptr<ops::LinearLayer>(std::move(*layer));
  }
  staging.Gather(parts);
  auto layer = staging.bf16() ? ops::Linear::Create(*context_, name, staging.bf16_data(), bias_data,
                                                    n, k, act, max_rows)
                              : ops::Linear::Create(*context_, name, staging.f32_data(), bias_data,
                                                    n, k, act, max_rows);
  if (!layer.ok()) return layer.status();
  return std::unique_ptr<ops::LinearLayer>(std::move(*layer));
}

absl::Status Transformer::PrepareWeights(const ModelWeights& w, int max_rows) {
  const ModelConfig& c = config_;
  const ArchitectureSpec& spec = Spec(c);
  TEXTGEN_RETURN_IF_ERROR(CheckWeights(w, c));
  // Read in place, a row per token: a copy would be the biggest tensor in f32.
  token_embedding_ = w.token_embedding;
  if (spec.learned_positions) position_embedding_ = ToFloatVector(w.position_embedding);
  if (!w.token_types.empty()) {
    token_type_row_.resize(c.dim);
    ToFloat(RowsOf(w.token_types, 0, 1), token_type_row_.data());
  }
  embedding_norm_ = ToFloatVector(w.embedding_norm);
  embedding_norm_bias_ = ToFloatVector(w.embedding_norm_bias);
  output_norm_ = ToFloatVector(w.output_norm);
  output_norm_bias_ = ToFloatVector(w.output_norm_bias);

  WeightStaging staging(context_->bf16(), storage_.get());
  layers_.resize(c.n_layers);
  // Attention layers take the cache's K/V layers in order; recurrent ones their part of a
  // sequence's state, in order.
  int kv_layer = 0;
  int64_t state_offset = 0;
  for (int l = 0; l < c.n_layers; ++l) {
    if (c.mixer(l) == LayerMixer::kAttention) {
      layers_[l].kv_layer = kv_layer++;
    } else if (c.layer_state_floats(l) > 0) {
      layers_[l].state_offset = state_offset;
      state_offset += c.layer_state_floats(l);
    }
    TEXTGEN_RETURN_IF_ERROR(PrepareLayer(w.layers[l], l, max_rows, staging));
  }
  // The LM head last (packing it first made decoding ~13% slower on the 110M bench,
  // reproducibly: the arena's placement matters).
  staging.Release();
  if (spec.encoder) return absl::OkStatus();  // no LM head
  return PrepareLmHead(w, max_rows, staging);
}

absl::Status Transformer::PrepareLayer(const LayerWeights& lw, int l, int max_rows,
                                       WeightStaging& staging) {
  const ModelConfig& c = config_;
  const ArchitectureSpec& spec = Spec(c);
  PreparedLayer& pl = layers_[l];
  const std::string p = absl::StrCat("blk.", l, ".");
  if (spec.post_norms) {
    pl.attn_post_norm = ToFloatVector(lw.attn_post_norm);
    pl.ffn_post_norm = ToFloatVector(lw.ffn_post_norm);
  }
  const bool sliding = c.is_sliding(l);
  pl.attn_sinks = ToFloatVector(lw.attn_sinks);
  pl.scoring =
      ops::AttentionScoring{.scale = c.attention_scale,
                            .softcap = c.attention_softcap,
                            .window = sliding ? c.sliding_window : 0,
                            .causal = c.causal,
                            .sinks = pl.attn_sinks.empty() ? nullptr : pl.attn_sinks.data()};
  pl.rope = sliding && local_rope_ != nullptr ? local_rope_.get() : rope_.get();
  if (spec.qk_norm) {
    pl.q_norm = ToFloatVector(lw.q_norm);
    pl.k_norm = ToFloatVector(lw.k_norm);
  }
  pl.attn_norm = ToFloatVector(lw.attn_norm);
  pl.attn_norm_bias = ToFloatVector(lw.attn_norm_bias);
  pl.ffn_norm = ToFloatVector(lw.ffn_norm);
  pl.ffn_norm_bias = ToFloatVector(lw.ffn_norm_bias);
  switch (c.mixer(l)) {
    case LayerMixer::kGatedDeltaNet:
      TEXTGEN_RETURN_IF_ERROR(PrepareDeltaNet(lw, p, pl, max_rows, staging));
      break;
    case LayerMixer::kShortConv:
      TEXTGEN_RETURN_IF_ERROR(PrepareShortConv(lw, p, pl, max_rows, staging));
      break;
    case LayerMixer::kMamba2:
      TEXTGEN_RETURN_IF_ERROR(PrepareMamba2(lw, p, pl, max_rows, staging));
      break;
    case LayerMixer::kAttention:
      TEXTGEN_RETURN_IF_ERROR(PrepareAttention(lw, p, pl, max_rows, staging));
      break;
    case LayerMixer::kNone:
      break;
  }
  if (!c.has_feed_forward(l)) return absl::OkStatus();
  if (c.layer_has_experts(l)) return PrepareExperts(lw, p, pl, max_rows, staging);
  return PrepareFeedForward(lw, p, pl, max_rows, staging);
}

absl::Status Transformer::PrepareAttention(const LayerWeights& lw, const std::string& p,
                                           PreparedLayer& pl, int max_rows,
                                           WeightStaging& staging) {
  const ModelConfig& c = config_;
  // Q, K and V as one matmul: [q_dim + 2 kv_dim, dim] (q_dim twice with Qwen3.5's gate).
  const int q_rows = (Spec(c).attention_output_gate ? 2 : 1) * q_dim_;
  std::vector<float> bias;
  if (!lw.bq.empty()) {
    bias.resize(q_rows + 2 * kv_dim_);
    ToFloat(lw.bq, bias.data());
    ToFloat(lw.bk, bias.data() + q_rows);
    ToFloat(lw.bv, bias.data() + q_rows + kv_dim_);
  }
  auto qkv = MakeLinear(p + "qkv", {&lw.wq, &lw.wk, &lw.wv}, bias, q_rows + 2 * kv_dim_, c.dim,
                        ops::LinearActivation::kNone, max_rows, staging);
  if (!qkv.ok()) return qkv.status();
  pl.qkv = std::move(*qkv);

  auto wo = MakeLinear(p + "attn_output", {&lw.wo}, ToFloatVector(lw.bo), c.dim, q_dim_,
                       ops::LinearActivation::kNone, max_rows, staging);
  if (!wo.ok()) return wo.status();
  pl.wo = std::move(*wo);
  return absl::OkStatus();
}

absl::Status Transformer::PrepareFeedForward(const LayerWeights& lw, const std::string& p,
                                             PreparedLayer& pl, int max_rows,
                                             WeightStaging& staging) {
  const ModelConfig& c = config_;
  const bool gated = IsGated(c);
  // GPT-2's GELU runs as the up projection's post-op; the others after it.
  const auto linear_act = Spec(c).feed_forward == FeedForwardKind::kGelu
                              ? ops::LinearActivation::kGeluTanh
                              : ops::LinearActivation::kNone;
  // SwiGLU/GeGLU: gate and up as one matmul [2 hidden, dim]; GPT-2: GELU fused as a post-op.
  auto up = gated ? MakeLinear(p + "ffn_up", {&lw.w_gate, &lw.w_up}, ToFloatVector(lw.b_up),
                               2 * c.hidden_dim, c.dim, linear_act, max_rows, staging)
                  : MakeLinear(p + "ffn_up", {&lw.w_up}, ToFloatVector(lw.b_up), c.hidden_dim,
                               c.dim, linear_act, max_rows, staging);
  if (!up.ok()) return up.status();
  pl.up = std::move(*up);

  auto down = MakeLinear(p + "ffn_down", {&lw.w_down}, ToFloatVector(lw.b_down), c.dim,
                         c.hidden_dim, ops::LinearActivation::kNone, max_rows, staging);
  if (!down.ok()) return down.status();
  pl.down = std::move(*down);
  return absl::OkStatus();
}

absl::Status Transformer::PrepareLmHead(const ModelWeights& w, int max_rows,
                                        WeightStaging& staging) {
  const ModelConfig& c = config_;
  // From row blocks dequantized as they are packed: it is usually the largest matrix (vocab x
  // dim, 1 GiB in bf16 for a 128k vocabulary at dim 4096) and is never staged whole.
  // Tied output: the loader points `output` at the token embedding; fall back to it too.
  const TensorView& out = w.output.empty() ? w.token_embedding : w.output;
  if (UsesQuantizedKernels(quantized_kernels_, {&out})) {
    auto head = MakeLinear("output", {&out}, {}, c.vocab_size, c.dim, ops::LinearActivation::kNone,
                           max_rows, staging);
    if (!head.ok()) return head.status();
    lm_head_ = std::move(*head);
    return absl::OkStatus();
  }
  const ops::Linear::WeightRows head_rows = [&](int begin, int count, void* dst) {
    staging.ConvertRows(RowsOf(out, begin, count), dst);
  };
  auto head = ops::Linear::Create(*context_, "output", head_rows, staging.bf16(), nullptr,
                                  c.vocab_size, c.dim, ops::LinearActivation::kNone, max_rows);
  if (!head.ok()) return head.status();
  lm_head_ = std::move(*head);
  storage_->DoneReading(out.data, ByteSize(out));  // Create refused a null storage
  return absl::OkStatus();
}

}  // namespace textgen::model
