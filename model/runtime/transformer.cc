#include "model/runtime/transformer.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "model/arch/architectures.h"
#include "model/base/status_macros.h"
#include "model/format/block_formats.h"
#include "model/kernels/activations.h"
#include "model/kernels/norms.h"
#include "model/runtime/weight_staging.h"

// Transformer, part 2: the forward pass, in data-flow order (loading is in
// transformer_weights.cc).

namespace textgen::model {

void Transformer::Embed(const BatchPlan& plan) {
  const int dim = config_.dim;
  const int rows = static_cast<int>(plan.tokens.size());
  for (int r = 0; r < rows; ++r) {
    float* x = x_.data() + static_cast<size_t>(r) * dim;
    ToFloat(RowsOf(token_embedding_, plan.tokens[r], 1), x);
    if (config_.embedding_scale != 1.0f) {
      for (int i = 0; i < dim; ++i) x[i] *= config_.embedding_scale;
    }
    if (!position_embedding_.empty()) {
      ops::AddInPlace(position_embedding_.data() + static_cast<size_t>(plan.positions[r]) * dim,
                      dim, x);
    }
    if (!token_type_row_.empty()) ops::AddInPlace(token_type_row_.data(), dim, x);
  }
  // Encoders normalize the summed embeddings (row by row: batch-invariant).
  if (!embedding_norm_.empty()) {
    ops::LayerNorm(x_.data(), rows, dim, embedding_norm_.data(), embedding_norm_bias_.data(),
                   config_.norm_eps, x_.data());
  }
}

void Transformer::Norm(const float* x, int rows, const std::vector<float>& w,
                       const std::vector<float>& b, float* out) const {
  if (SpecOf(config_.architecture).norm == NormKind::kRms) {
    ops::RmsNorm(x, rows, config_.dim, w.data(), config_.norm_eps, out);
  } else {
    ops::LayerNorm(x, rows, config_.dim, w.data(), b.data(), config_.norm_eps, out);
  }
}

absl::Status Transformer::DenseFeedForward(PreparedLayer& pl, const float* mlp_x, int rows) {
  const ModelConfig& c = config_;
  TEXTGEN_RETURN_IF_ERROR(pl.up->Run(mlp_x, rows, hidden_.data()));
  const float* mlp_in = hidden_.data();
  if (SpecOf(c.architecture).feed_forward == FeedForwardKind::kSwiGlu) {
    ops::SiluMul(hidden_.data(), rows, c.hidden_dim, act_.data());
    mlp_in = act_.data();
  } else if (SpecOf(c.architecture).feed_forward == FeedForwardKind::kGeGlu) {
    ops::GeluTanhMul(hidden_.data(), rows, c.hidden_dim, act_.data());
    mlp_in = act_.data();
  } else if (SpecOf(c.architecture).feed_forward == FeedForwardKind::kReluSquared) {
    ops::ReluSquaredInPlace(static_cast<int64_t>(rows) * c.hidden_dim, hidden_.data());
  }
  return pl.down->Run(mlp_in, rows, proj_.data());
}

void Transformer::SplitQueryGate(int rows) {
  const ModelConfig& c = config_;
  const int hd = c.head_dim;
  const int gated_dim = 2 * q_dim_ + 2 * kv_dim_;
  for (int r = 0; r < rows; ++r) {
    const float* in = gated_qkv_.data() + static_cast<size_t>(r) * gated_dim;
    float* q = qkv_.data() + static_cast<size_t>(r) * qkv_dim_;
    float* gate = attn_gate_.data() + static_cast<size_t>(r) * q_dim_;
    for (int h = 0; h < c.n_heads; ++h) {
      std::memcpy(q + h * hd, in + 2 * h * hd, sizeof(float) * hd);
      std::memcpy(gate + h * hd, in + (2 * h + 1) * hd, sizeof(float) * hd);
    }
    std::memcpy(q + q_dim_, in + 2 * q_dim_, sizeof(float) * 2 * kv_dim_);
  }
}

absl::Status Transformer::Attention(PreparedLayer& pl, const float* in, const BatchPlan& plan,
                                    const KvCache& cache) {
  const ModelConfig& c = config_;
  const bool output_gate = SpecOf(c.architecture).attention_output_gate;
  const int rows = static_cast<int>(plan.tokens.size());
  if (output_gate) {
    TEXTGEN_RETURN_IF_ERROR(pl.qkv->Run(in, rows, gated_qkv_.data()));
    SplitQueryGate(rows);
  } else {
    TEXTGEN_RETURN_IF_ERROR(pl.qkv->Run(in, rows, qkv_.data()));
  }
  if (!pl.q_norm.empty()) {
    // Qwen 3, Gemma 3: RMSNorm over each head of q and k (row by row, so batch-invariant).
    for (int r = 0; r < rows; ++r) {
      float* q = qkv_.data() + static_cast<size_t>(r) * qkv_dim_;
      ops::RmsNorm(q, c.n_heads, c.head_dim, pl.q_norm.data(), c.norm_eps, q);
      ops::RmsNorm(q + q_dim_, c.n_kv_heads, c.head_dim, pl.k_norm.data(), c.norm_eps, q + q_dim_);
    }
  }
  if (pl.rope != nullptr) {
    pl.rope->Apply(qkv_.data(), rows, qkv_dim_, plan.positions.data(), c.n_heads);
    pl.rope->Apply(qkv_.data() + q_dim_, rows, qkv_dim_, plan.positions.data(), c.n_kv_heads);
  }
  const ops::PagedKvLayout kv = cache.LayerLayout(pl.kv_layer);
  ops::StoreKv(plan.chunks, kv, qkv_.data() + q_dim_, qkv_.data() + q_dim_ + kv_dim_, qkv_dim_);
  ops::PagedAttention(plan.chunks, kv, c.n_heads, qkv_.data(), qkv_dim_, att_.data(), q_dim_,
                      scores_.data(), c.context_length, pl.scoring);
  if (output_gate) {
    ops::MulSigmoidInPlace(attn_gate_.data(), static_cast<int64_t>(rows) * q_dim_, att_.data());
  }
  return pl.wo->Run(att_.data(), rows, proj_.data());
}

absl::Status Transformer::Block(int layer, const BatchPlan& plan, const KvCache& cache) {
  const ModelConfig& c = config_;
  PreparedLayer& pl = layers_[layer];
  const int rows = static_cast<int>(plan.tokens.size());
  const int64_t n = static_cast<int64_t>(rows) * c.dim;

  // Attention: x += Wo · attend(rope(Wq·norm(x)), cache ∪ rope(Wk·norm(x)), Wv·norm(x)); post-norm
  // blocks (BERT) normalize the sum instead: x = norm(x + Wo · attend(Wq·x, Wk·x, Wv·x)).
  // Recurrent layers mix through the sequence's state instead of its K/V.
  // A block may lack either half (Nemotron-H's blocks are a mixer or a feed-forward).
  const bool post_norm = SpecOf(c.architecture).norm_placement == NormPlacement::kAfterResidual;
  if (c.mixer(layer) != LayerMixer::kNone) {
    const float* attn_in = x_.data();
    if (!post_norm) {
      Norm(x_.data(), rows, pl.attn_norm, pl.attn_norm_bias, xn_.data());
      attn_in = xn_.data();
    }
    switch (c.mixer(layer)) {
      case LayerMixer::kGatedDeltaNet:
        TEXTGEN_RETURN_IF_ERROR(DeltaNet(pl, attn_in, plan));
        break;
      case LayerMixer::kShortConv:
        TEXTGEN_RETURN_IF_ERROR(ShortConv(pl, attn_in, plan));
        break;
      case LayerMixer::kMamba2:
        TEXTGEN_RETURN_IF_ERROR(Mamba2(pl, attn_in, plan));
        break;
      case LayerMixer::kAttention:
        TEXTGEN_RETURN_IF_ERROR(Attention(pl, attn_in, plan, cache));
        break;
      case LayerMixer::kNone:
        break;
    }
    if (!pl.attn_post_norm.empty()) {
      ops::RmsNorm(proj_.data(), rows, c.dim, pl.attn_post_norm.data(), c.norm_eps, proj_.data());
    }
    if (c.residual_scale != 1.0f) ops::ScaleInPlace(c.residual_scale, n, proj_.data());
    ops::AddInPlace(proj_.data(), n, x_.data());
    if (post_norm) Norm(x_.data(), rows, pl.attn_norm, pl.attn_norm_bias, x_.data());
  }
  if (!c.has_feed_forward(layer)) return absl::OkStatus();

  // MLP: x += W2 · (act(W1·norm(x)) * W3·norm(x))   or   x += W2 · gelu(W1·norm(x) + b1) + b2,
  // or the weighted sum of such SwiGLUs of the experts the router picks (mixture of experts)
  // (Gemma: the attention and MLP outputs are RMS-normalized before they are added; BERT:
  // the sum is normalized, as above)
  const float* mlp_x = x_.data();
  if (!post_norm) {
    Norm(x_.data(), rows, pl.ffn_norm, pl.ffn_norm_bias, xn_.data());
    mlp_x = xn_.data();
  }
  TEXTGEN_RETURN_IF_ERROR(c.layer_has_experts(layer) ? ExpertFeedForward(pl, mlp_x, rows)
                                                     : DenseFeedForward(pl, mlp_x, rows));
  if (!pl.ffn_post_norm.empty()) {
    ops::RmsNorm(proj_.data(), rows, c.dim, pl.ffn_post_norm.data(), c.norm_eps, proj_.data());
  }
  if (c.residual_scale != 1.0f) ops::ScaleInPlace(c.residual_scale, n, proj_.data());
  ops::AddInPlace(proj_.data(), n, x_.data());
  if (post_norm) Norm(x_.data(), rows, pl.ffn_norm, pl.ffn_norm_bias, x_.data());
  return absl::OkStatus();
}

absl::Status Transformer::Forward(const BatchPlan& plan, const KvCache& cache) {
  const int rows = static_cast<int>(plan.tokens.size());
  if (rows <= 0 || rows > max_rows_) {
    return absl::InternalError(
        absl::StrCat("Transformer::Forward: ", rows, " rows outside [1, ", max_rows_, "]"));
  }
  // Recurrent layers advance one state per chunk.
  if (config_.has_recurrent_layers() && plan.states.size() != plan.chunks.size()) {
    return absl::InternalError(absl::StrCat("Transformer::Forward: ", plan.states.size(),
                                            " recurrent states for ", plan.chunks.size(),
                                            " chunks"));
  }
  // The OpenMP pool size is per calling thread: set it on the engine thread every time.
  omp_set_num_threads(context_->threads());
  Embed(plan);
  for (int l = 0; l < config_.n_layers; ++l) TEXTGEN_RETURN_IF_ERROR(Block(l, plan, cache));

  const int dim = config_.dim;
  // Embeddings: the output-normed hidden states, row by row (a row's norm reads only it).
  const int hidden = static_cast<int>(plan.hidden_rows.size());
  if (hidden > 0) {
    const size_t need = static_cast<size_t>(hidden) * dim;
    if (hidden_out_.size() < need) hidden_out_.resize(need);
    for (int i = 0; i < hidden; ++i) {
      std::memcpy(hidden_out_.data() + static_cast<size_t>(i) * dim,
                  x_.data() + static_cast<size_t>(plan.hidden_rows[i]) * dim, sizeof(float) * dim);
    }
    // Encoders have no final norm: the last block's output is the hidden state.
    if (!output_norm_.empty()) {
      Norm(hidden_out_.data(), hidden, output_norm_, output_norm_bias_, hidden_out_.data());
    }
  }
  // Final norm and LM head only for the rows whose logits are wanted.
  const int wanted = static_cast<int>(plan.logit_rows.size());
  if (wanted == 0) return absl::OkStatus();
  if (lm_head_ == nullptr) {
    return absl::InternalError("Transformer::Forward: logits asked of an encoder (no LM head)");
  }
  for (int i = 0; i < wanted; ++i) {
    std::memcpy(proj_.data() + static_cast<size_t>(i) * dim,
                x_.data() + static_cast<size_t>(plan.logit_rows[i]) * dim, sizeof(float) * dim);
  }
  Norm(proj_.data(), wanted, output_norm_, output_norm_bias_, xn_.data());
  const size_t need = static_cast<size_t>(wanted) * config_.vocab_size;
  if (logits_.size() < need) logits_.resize(need);  // grows to the largest batch once
  TEXTGEN_RETURN_IF_ERROR(lm_head_->Run(xn_.data(), wanted, logits_.data()));
  if (config_.logit_scale != 1.0f) {
    ops::ScaleInPlace(1.0f / config_.logit_scale, static_cast<int64_t>(need), logits_.data());
  }
  if (config_.final_logit_softcap > 0) {
    ops::SoftCap(logits_.data(), static_cast<int64_t>(need), config_.final_logit_softcap);
  }
  return absl::OkStatus();
}

}  // namespace textgen::model
