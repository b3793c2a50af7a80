#include "model/arch/tensor_table.h"

#include "absl/strings/str_cat.h"

namespace textgen::model {
namespace {

TensorEntry Matrix(std::string name, int layer, WeightSlot slot, int64_t rows, int64_t cols,
                   bool required = true) {
  return {std::move(name), layer, rows, cols, required, TensorInit::kRandom, {{slot, rows}}};
}

TensorEntry Vector(std::string name, int layer, WeightSlot slot, int64_t elements, bool required,
                   TensorInit init = TensorInit::kRandom) {
  return {std::move(name), layer, 1, elements, required, init, {{slot, elements}}};
}

// A tensor holding several weights one after another (rows of a matrix, elements of a vector).
TensorEntry Fused(std::string name, int layer, int64_t cols, bool vector, bool required,
                  std::vector<TensorPart> parts) {
  int64_t total = 0;
  for (const TensorPart& part : parts) total += part.rows;
  return {std::move(name),     layer,           vector ? 1 : total, vector ? total : cols, required,
          TensorInit::kRandom, std::move(parts)};
}

// `experts` matrices [rows, cols] stacked in one 3-D tensor.
TensorEntry Experts(std::string name, int layer, WeightSlot slot, int64_t experts, int64_t rows,
                    int64_t cols) {
  return {std::move(name), layer, rows, cols, true, TensorInit::kRandom, {{slot, rows}}, experts};
}

// A Gated DeltaNet layer's tensors, as llama.cpp's qwen35 and qwen3next loaders read them. The
// decay's scale ssm_a (-exp(A_log)) has no ".weight" suffix.
void AppendDeltaNetTensors(const DeltaNetShape& d, int64_t dim, const std::string& b, int l,
                           TensorLayout layout, std::vector<TensorEntry>& t) {
  using enum WeightSlot;
  if (layout.fused_qkvz) {
    t.push_back(Matrix(b + "ssm_in.weight", l, kSsmQkvz, d.conv_channels() + d.value_dim(), dim));
  } else {
    t.push_back(Matrix(b + "attn_qkv.weight", l, kSsmInput, d.conv_channels(), dim));
    t.push_back(Matrix(b + "attn_gate.weight", l, kSsmGate, d.value_dim(), dim));
  }
  t.push_back(Matrix(b + "ssm_conv1d.weight", l, kSsmConv, d.conv_channels(), d.conv_kernel));
  t.push_back(Vector(b + "ssm_dt.bias", l, kSsmDtBias, d.v_heads, true));
  t.push_back(Vector(b + "ssm_a", l, kSsmA, d.v_heads, true, TensorInit::kMinusOnes));
  if (layout.fused_beta_alpha) {
    t.push_back(Matrix(b + "ssm_ba.weight", l, kSsmBetaAlpha, 2 * d.v_heads, dim));
  } else {
    t.push_back(Matrix(b + "ssm_beta.weight", l, kSsmBeta, d.v_heads, dim));
    t.push_back(Matrix(b + "ssm_alpha.weight", l, kSsmAlpha, d.v_heads, dim));
  }
  t.push_back(Vector(b + "ssm_norm.weight", l, kSsmNorm, d.head_v_dim, true, TensorInit::kOnes));
  t.push_back(Matrix(b + "ssm_out.weight", l, kSsmOutput, dim, d.value_dim()));
}

// A gated short-convolution layer's tensors (LFM2), in the slots of the recurrent input
// projection (b | c | x rows), convolution and output projection.
void AppendShortConvTensors(const ModelConfig& c, const std::string& b, int l,
                            std::vector<TensorEntry>& t) {
  using enum WeightSlot;
  const int64_t dim = c.dim;
  t.push_back(Matrix(b + "shortconv.in_proj.weight", l, kSsmInput, 3 * dim, dim));
  t.push_back(Matrix(b + "shortconv.conv.weight", l, kSsmConv, dim, c.short_conv_kernel));
  t.push_back(Matrix(b + "shortconv.out_proj.weight", l, kSsmOutput, dim, dim));
}

// A Mamba2 layer's tensors, as llama.cpp's mamba2, nemotron_h and granitehybrid loaders read
// them: ssm_a (-exp(A_log)) and ssm_d are [heads, 1] without a ".weight" suffix, ssm_norm holds
// one row of weights per group.
void AppendMamba2Tensors(const Mamba2Shape& m, int64_t dim, const std::string& b, int l,
                         std::vector<TensorEntry>& t) {
  using enum WeightSlot;
  t.push_back(Matrix(b + "ssm_in.weight", l, kSsmInput, m.in_rows(), dim));
  t.push_back(Matrix(b + "ssm_conv1d.weight", l, kSsmConv, m.conv_channels(), m.conv_kernel));
  t.push_back(Vector(b + "ssm_conv1d.bias", l, kSsmConvBias, m.conv_channels(), false));
  t.push_back(Vector(b + "ssm_dt.bias", l, kSsmDtBias, m.heads, true));
  TensorEntry a = Matrix(b + "ssm_a", l, kSsmA, m.heads, 1);
  a.init = TensorInit::kMinusOnes;
  t.push_back(std::move(a));
  TensorEntry d = Matrix(b + "ssm_d", l, kSsmD, m.heads, 1);
  d.init = TensorInit::kOnes;
  t.push_back(std::move(d));
  TensorEntry norm = Matrix(b + "ssm_norm.weight", l, kSsmNorm, m.groups, m.inner / m.groups);
  norm.init = TensorInit::kOnes;
  t.push_back(std::move(norm));
  t.push_back(Matrix(b + "ssm_out.weight", l, kSsmOutput, dim, m.inner));
}

// An attention layer's tensors. With an output gate (Qwen3.5) attn_q holds each head's q and
// gate rows one after the other, so its rows are twice the heads' width.
void AppendAttentionTensors(const ArchitectureSpec& spec, const ModelConfig& c,
                            const std::string& b, int l, TensorLayout layout,
                            std::vector<TensorEntry>& t) {
  using enum WeightSlot;
  const int64_t dim = c.dim;
  const int64_t q_dim = int64_t{c.n_heads} * c.head_dim, kv_dim = c.kv_dim();
  const int64_t q_rows = (spec.attention_output_gate ? 2 : 1) * q_dim;
  if (layout.fused_qkv) {
    t.push_back(Fused(b + "attn_qkv.weight", l, dim, false, true,
                      {{kQ, q_rows}, {kK, kv_dim}, {kV, kv_dim}}));
    t.push_back(Fused(b + "attn_qkv.bias", l, dim, true, spec.attention_bias,
                      {{kQBias, q_rows}, {kKBias, kv_dim}, {kVBias, kv_dim}}));
  } else {
    t.push_back(Matrix(b + "attn_q.weight", l, kQ, q_rows, dim));
    t.push_back(Matrix(b + "attn_k.weight", l, kK, kv_dim, dim));
    t.push_back(Matrix(b + "attn_v.weight", l, kV, kv_dim, dim));
    t.push_back(Vector(b + "attn_q.bias", l, kQBias, q_rows, spec.attention_bias));
    t.push_back(Vector(b + "attn_k.bias", l, kKBias, kv_dim, spec.attention_bias));
    t.push_back(Vector(b + "attn_v.bias", l, kVBias, kv_dim, spec.attention_bias));
  }
  if (spec.qk_norm) {
    t.push_back(Vector(b + "attn_q_norm.weight", l, kQNorm, c.head_dim, true, TensorInit::kOnes));
    t.push_back(Vector(b + "attn_k_norm.weight", l, kKNorm, c.head_dim, true, TensorInit::kOnes));
  }
  if (spec.attention_sinks) {
    t.push_back(Vector(b + "attn_sinks.weight", l, kAttnSinks, c.n_heads, true));
  }
  t.push_back(Matrix(b + "attn_output.weight", l, kAttnOutput, dim, q_dim));
  t.push_back(Vector(b + "attn_output.bias", l, kAttnOutputBias, dim, spec.output_bias));
}

}  // namespace

TensorLayout FileLayoutOf(const ArchitectureSpec& spec) {
  return {.fused_qkv = spec.fused_qkv,
          .fused_gate_up = spec.fused_gate_up,
          .fused_beta_alpha = spec.delta_net_layout == DeltaNetLayout::kQwen3Next};
}

std::vector<TensorEntry> LayerTensorTable(const ArchitectureSpec& spec, const ModelConfig& c,
                                          int layer, TensorLayout layout) {
  using enum WeightSlot;
  const int64_t dim = c.dim, hidden = c.hidden_dim;
  const bool layer_norm = spec.norm == NormKind::kLayer;
  const std::string b = absl::StrCat("blk.", layer, ".");
  const int l = layer;
  // Post-norm blocks (BERT) name their norms by what they follow: the attention output and the
  // layer output; they fill the same slots as a pre-norm block's two norms.
  const bool post = spec.norm_placement == NormPlacement::kAfterResidual;
  const std::string attn_norm = post ? "attn_output_norm" : "attn_norm";
  const std::string ffn_norm = post ? "layer_output_norm" : spec.ffn_norm_name;
  std::vector<TensorEntry> t;
  // A block without a mixer (Nemotron-H's feed-forward blocks) has no mixer norm either: its
  // one norm is the feed-forward's (named attn_norm there).
  if (c.mixer(layer) != LayerMixer::kNone) {
    t.push_back(Vector(b + attn_norm + ".weight", l, kAttnNorm, dim, true, TensorInit::kOnes));
    t.push_back(
        Vector(b + attn_norm + ".bias", l, kAttnNormBias, dim, layer_norm, TensorInit::kZeros));
  }
  switch (c.mixer(layer)) {
    case LayerMixer::kGatedDeltaNet:
      AppendDeltaNetTensors(c.delta_net, dim, b, l, layout, t);
      break;
    case LayerMixer::kShortConv:
      AppendShortConvTensors(c, b, l, t);
      break;
    case LayerMixer::kMamba2:
      AppendMamba2Tensors(c.mamba2, dim, b, l, t);
      break;
    case LayerMixer::kAttention:
      AppendAttentionTensors(spec, c, b, l, layout, t);
      break;
    case LayerMixer::kNone:
      break;
  }
  if (!c.has_feed_forward(layer)) return t;
  t.push_back(Vector(b + ffn_norm + ".weight", l, kFfnNorm, dim, true, TensorInit::kOnes));
  t.push_back(Vector(b + ffn_norm + ".bias", l, kFfnNormBias, dim, layer_norm, TensorInit::kZeros));
  const bool gated = IsGatedFeedForward(spec.feed_forward);
  if (c.layer_has_experts(layer)) {
    // The router is kept in f32 by llama.cpp's quantizer; the experts are as the file says.
    const int64_t experts = c.experts, width = c.expert_hidden_dim;
    t.push_back(Matrix(b + "ffn_gate_inp.weight", l, kRouter, experts, dim));
    if (spec.experts.selection_bias) {
      t.push_back(Vector(b + "exp_probs_b.bias", l, kExpertSelectionBias, experts, true));
    }
    if (gated) {
      t.push_back(Experts(b + "ffn_gate_exps.weight", l, kGateExperts, experts, width, dim));
    }
    t.push_back(Experts(b + "ffn_up_exps.weight", l, kUpExperts, experts, width, dim));
    t.push_back(Experts(b + "ffn_down_exps.weight", l, kDownExperts, experts, dim, width));
    if (c.shared_expert_hidden_dim > 0) {
      const int64_t shared = c.shared_expert_hidden_dim;
      if (spec.experts.shared_expert == SharedExpert::kGated) {
        t.push_back(Vector(b + "ffn_gate_inp_shexp.weight", l, kSharedExpertGate, dim, true));
      }
      if (gated) t.push_back(Matrix(b + "ffn_gate_shexp.weight", l, kSharedGate, shared, dim));
      t.push_back(Matrix(b + "ffn_up_shexp.weight", l, kSharedUp, shared, dim));
      t.push_back(Matrix(b + "ffn_down_shexp.weight", l, kSharedDown, dim, shared));
    }
    if (spec.experts.biases) {
      // GGUF [width, experts]: a bias row per expert.
      t.push_back(Vector(b + "ffn_gate_inp.bias", l, kRouterBias, experts, true));
      t.push_back(Matrix(b + "ffn_gate_exps.bias", l, kGateExpertsBias, experts, width));
      t.push_back(Matrix(b + "ffn_up_exps.bias", l, kUpExpertsBias, experts, width));
      t.push_back(Matrix(b + "ffn_down_exps.bias", l, kDownExpertsBias, experts, dim));
    }
  } else {
    if (layout.fused_gate_up) {
      t.push_back(
          Fused(b + "ffn_up.weight", l, dim, false, true, {{kGate, hidden}, {kUp, hidden}}));
    } else {
      if (gated) {
        t.push_back(Matrix(b + "ffn_gate.weight", l, kGate, hidden, dim));
      }
      t.push_back(Matrix(b + "ffn_up.weight", l, kUp, hidden, dim));
    }
    t.push_back(Vector(b + "ffn_up.bias", l, kUpBias, hidden, spec.output_bias));
    t.push_back(Matrix(b + "ffn_down.weight", l, kDown, dim, hidden));
    t.push_back(Vector(b + "ffn_down.bias", l, kDownBias, dim, spec.output_bias));
  }
  if (spec.post_norms) {
    t.push_back(
        Vector(b + "post_attention_norm.weight", l, kAttnPostNorm, dim, true, TensorInit::kOnes));
    t.push_back(Vector(b + "post_ffw_norm.weight", l, kFfnPostNorm, dim, true, TensorInit::kOnes));
  }
  return t;
}

int LeadingTensorCount(const ArchitectureSpec& spec) {
  return 1 + (spec.learned_positions ? 1 : 0) + (spec.encoder ? 3 : 0);
}

std::vector<TensorEntry> GlobalTensorTable(const ArchitectureSpec& spec, const ModelConfig& c) {
  using enum WeightSlot;
  const int64_t dim = c.dim, vocab = c.vocab_size;
  std::vector<TensorEntry> t;
  t.push_back(Matrix("token_embd.weight", -1, kTokenEmbedding, vocab, dim));
  if (spec.learned_positions) {
    t.push_back(Matrix("position_embd.weight", -1, kPositionEmbedding, c.context_length, dim));
  }
  if (spec.encoder) {
    // Only row 0 ("sentence A") is used, as llama.cpp does.
    t.push_back(Matrix("token_types.weight", -1, kTokenTypes, c.token_type_count, dim,
                       /*required=*/false));
    t.push_back(Vector("token_embd_norm.weight", -1, kEmbeddingNorm, dim, true, TensorInit::kOnes));
    t.push_back(
        Vector("token_embd_norm.bias", -1, kEmbeddingNormBias, dim, true, TensorInit::kZeros));
    return t;  // no LM head
  }
  const std::string norm = spec.output_norm_name;
  t.push_back(Vector(norm + ".weight", -1, kOutputNorm, dim, true, TensorInit::kOnes));
  t.push_back(Vector(norm + ".bias", -1, kOutputNormBias, dim, spec.norm == NormKind::kLayer,
                     TensorInit::kZeros));
  // Absent when the output is tied to the token embedding.
  t.push_back(Matrix("output.weight", -1, kOutput, vocab, dim, /*required=*/false));
  if (spec.rope_freq_factors) {
    const int64_t pairs = c.rope_dim / 2;
    t.push_back(Vector("rope_freqs.weight", -1, kRopeFreqs, pairs, false));
    t.push_back(Vector("rope_factors_long.weight", -1, kRopeFactorsLong, pairs, false));
    t.push_back(Vector("rope_factors_short.weight", -1, kRopeFactorsShort, pairs, false));
  }
  return t;
}

}  // namespace textgen::model
