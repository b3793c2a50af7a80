#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/arch/model_config.h"
#include "model/format/weights.h"
#include "model/kernels/attention.h"
#include "model/kernels/causal_conv.h"
#include "model/kernels/huge_page_arena.h"
#include "model/kernels/linear_layer.h"
#include "model/kernels/onednn_matmul.h"
#include "model/kernels/quant/quantized_linear.h"
#include "model/kernels/rope.h"
#include "model/runtime/kv_cache.h"

namespace textgen::model {

class WeightStaging;

// A batch already validated and with KV room reserved: rows are the batch's tokens in
// order, chunk by chunk.
struct BatchPlan {
  std::span<const ops::AttentionChunk> chunks;
  std::span<const int> tokens;       // [rows]
  std::span<const int> positions;    // [rows]
  std::span<const int> logit_rows;   // rows whose logits are wanted, in output order
  std::span<const int> hidden_rows;  // rows whose final hidden states are wanted, in order
  // [chunks] each chunk's sequence's recurrent state (KvCache::RecurrentState), advanced past
  // the chunk's tokens; empty for models without recurrent layers.
  std::span<std::byte* const> states;
};

// How the transformer computes; EngineOptions documents each field.
struct TransformerOptions {
  int threads = 0;
  bool bf16 = false;
  int max_batch_tokens = 512;
  int skinny_max_rows = -1;
  bool quantized_kernels = true;
};

// Weights of one block, prepared once for oneDNN. Immutable after Create.
struct PreparedLayer {
  // [dim] (bias: LayerNorm models); post-norm blocks: after attention, after the MLP
  std::vector<float> attn_norm, attn_norm_bias;
  std::vector<float> ffn_norm, ffn_norm_bias;
  std::vector<float> q_norm, k_norm;       // [head_dim] (qwen3, gemma3), else empty
  std::vector<float> attn_post_norm;       // [dim] (gemma), else empty
  std::vector<float> ffn_post_norm;        // [dim] (gemma), else empty
  std::vector<float> attn_sinks;           // [n_heads] (gpt-oss), else empty
  ops::AttentionScoring scoring;           // scale, softcap, sliding window, sinks
  const ops::Rope* rope = nullptr;         // this layer's (global or local) RoPE
  std::unique_ptr<ops::LinearLayer> qkv;   // [dim] -> [q_dim + 2 kv_dim] (+bias)
  std::unique_ptr<ops::LinearLayer> wo;    // [q_dim] -> [dim]
  std::unique_ptr<ops::LinearLayer> up;    // [dim] -> [2 hidden] gate|up (llama),
                                           //          [hidden] GELU(up + b) (gpt2)
  std::unique_ptr<ops::LinearLayer> down;  // [hidden] -> [dim]
  // Mixture of experts, instead of up and down: the router, and each expert's gate|up and down.
  std::unique_ptr<ops::LinearLayer> router;                    // [dim] -> [experts]
  std::vector<std::unique_ptr<ops::LinearLayer>> expert_up;    // [dim] -> [2 width] gate|up
  std::vector<std::unique_ptr<ops::LinearLayer>> expert_down;  // [width] -> [dim]
  // The same experts when every one runs the quantized kernels (then a step's experts run in
  // one parallel region), else empty.
  std::vector<ops::QuantizedLinear*> quantized_up, quantized_down;
  // A gated shared expert (qwen35moe): gate|up and down, and the row whose dot with the input
  // gives its gate logit.
  std::unique_ptr<ops::LinearLayer> shared_up, shared_down;
  std::vector<float> shared_expert_gate;     // [dim] (qwen35moe), else empty
  std::vector<float> expert_selection_bias;  // [experts] (exp_probs_b), else empty
  // Attention layers: which of the cache's K/V layers is this one's.
  int kv_layer = -1;
  // Gated DeltaNet layers, instead of qkv and wo (transformer_recurrent.cc); short-convolution
  // layers use ssm_in ([dim] -> [3 dim] b | c | x), ssm_out ([dim] -> [dim]) and ssm_conv.
  std::unique_ptr<ops::LinearLayer> ssm_in;   // [dim] -> [conv channels + value_dim] qkv | z
  std::unique_ptr<ops::LinearLayer> ssm_ba;   // [dim] -> [2 v_heads] beta | alpha
  std::unique_ptr<ops::LinearLayer> ssm_out;  // [value_dim] -> [dim]
  std::vector<float> ssm_conv;                // [conv_kernel][conv channels]
  std::vector<float> ssm_dt_bias, ssm_a;      // [v_heads]
  std::vector<float> ssm_norm;                // [head_v_dim]; Mamba2: [inner], per group
  std::vector<float> ssm_conv_bias;           // [conv channels] (Mamba2), else empty
  std::vector<float> ssm_d;                   // [heads] the skip (Mamba2)
  // ssm_ba's rows grouped per key head (its value heads' betas, then their alphas: Qwen3-Next's
  // ssm_ba), else all betas then all alphas.
  bool beta_alpha_grouped = false;
  int64_t state_offset = 0;  // floats into a sequence's recurrent state
};

// The transformer math over a batch: embeddings, blocks, final norm, LM head. Owns the
// prepared weights and the scratch activations (sized for max_batch_tokens at Create, so
// Forward does not allocate once every batch size has been seen). Engine thread only.
class Transformer {
 public:
  // `storage` owns the memory `weights` point into; the transformer keeps it (it reads the
  // token embedding from there at every step) and tells it which ranges it has copied.
  static absl::StatusOr<std::unique_ptr<Transformer>> Create(
      const ModelConfig& config, const ModelWeights& weights,
      std::shared_ptr<const WeightStorage> storage, const TransformerOptions& options);

  // About how many bytes Create and Forward allocate for `config` and `weights`: the packed
  // weights (quantized ones at their packed size), the largest staging buffer and the
  // activations (Engine::Create checks it against the memory available before any of the work).
  static int64_t MemoryNeeded(const ModelConfig& config, const ModelWeights& weights,
                              const TransformerOptions& options);

  // Runs the batch, writing K/V of every row into the cache blocks of its chunk, the logits
  // of `plan.logit_rows` into logits() rows [0, logit_rows.size()), and the output-normed
  // hidden states of `plan.hidden_rows` into hidden_states() rows [0, hidden_rows.size()).
  absl::Status Forward(const BatchPlan& plan, const KvCache& cache);

  const float* logits() const { return logits_.data(); }
  const float* hidden_states() const { return hidden_out_.data(); }
  const ModelConfig& config() const { return config_; }
  ops::LinearLayer& lm_head() { return *lm_head_; }  // not in encoders
  bool has_lm_head() const { return lm_head_ != nullptr; }

 private:
  explicit Transformer(const ModelConfig& config) : config_(config) {}
  absl::Status PrepareWeights(const ModelWeights& weights, int max_rows);
  // One layer's norms, attention and feed-forward (or experts), in that order: the arena's
  // placement follows it.
  absl::Status PrepareLayer(const LayerWeights& lw, int layer, int max_rows,
                            WeightStaging& staging);
  // The LM head: the output projection, or the token embedding when tied.
  absl::Status PrepareLmHead(const ModelWeights& weights, int max_rows, WeightStaging& staging);
  // One layer over the row-wise concatenation of `parts`: quantized kernels when
  // `quantized_kernels_` and the parts allow, else oneDNN over weights staged in f32 / bf16.
  absl::StatusOr<std::unique_ptr<ops::LinearLayer>> MakeLinear(
      const std::string& name, std::span<const TensorView* const> parts,
      const std::vector<float>& bias, int n, int k, ops::LinearActivation act, int max_rows,
      WeightStaging& staging);
  absl::StatusOr<std::unique_ptr<ops::LinearLayer>> MakeLinear(
      const std::string& name, std::initializer_list<const TensorView*> parts,
      const std::vector<float>& bias, int n, int k, ops::LinearActivation act, int max_rows,
      WeightStaging& staging) {
    return MakeLinear(name, std::span<const TensorView* const>(parts.begin(), parts.size()), bias,
                      n, k, act, max_rows, staging);
  }
  void Embed(const BatchPlan& plan);
  void Norm(const float* x, int rows, const std::vector<float>& w, const std::vector<float>& b,
            float* out) const;
  absl::Status Block(int layer, const BatchPlan& plan, const KvCache& cache);
  // Attention over the cache: proj_ = Wo · attend(...) of `in` (normed rows).
  absl::Status Attention(PreparedLayer& pl, const float* in, const BatchPlan& plan,
                         const KvCache& cache);
  // Gated DeltaNet (transformer_recurrent.cc): proj_ = the layer's output for `in`, each
  // chunk's recurrent state advanced past its tokens.
  absl::Status DeltaNet(PreparedLayer& pl, const float* in, const BatchPlan& plan);
  // LFM2's gated short convolution, likewise.
  absl::Status ShortConv(PreparedLayer& pl, const float* in, const BatchPlan& plan);
  // Mamba2, likewise.
  absl::Status Mamba2(PreparedLayer& pl, const float* in, const BatchPlan& plan);
  // The recurrent layers' causal convolution of `in` into `out` (rows `channels` wide), each
  // chunk continuing its sequence's state at pl.state_offset.
  void CausalConv(const PreparedLayer& pl, const BatchPlan& plan, const float* in, int in_stride,
                  int kernel, int channels, ops::ConvActivation act, float* out);
  absl::Status PrepareAttention(const LayerWeights& lw, const std::string& prefix,
                                PreparedLayer& pl, int max_rows, WeightStaging& staging);
  absl::Status PrepareFeedForward(const LayerWeights& lw, const std::string& prefix,
                                  PreparedLayer& pl, int max_rows, WeightStaging& staging);
  absl::Status PrepareDeltaNet(const LayerWeights& lw, const std::string& prefix, PreparedLayer& pl,
                               int max_rows, WeightStaging& staging);
  absl::Status PrepareShortConv(const LayerWeights& lw, const std::string& prefix,
                                PreparedLayer& pl, int max_rows, WeightStaging& staging);
  absl::Status PrepareMamba2(const LayerWeights& lw, const std::string& prefix, PreparedLayer& pl,
                             int max_rows, WeightStaging& staging);
  // Qwen3.5's gated q rows [q_h | gate_h]...: q into qkv_, the gates into attn_gate_.
  void SplitQueryGate(int rows);
  // The feed-forward of a dense block: proj_ = down(act(up(mlp_x))).
  absl::Status DenseFeedForward(PreparedLayer& pl, const float* mlp_x, int rows);
  // The mixture of experts (transformer_experts.cc): proj_ = each token's experts' outputs,
  // weighted and summed.
  absl::Status ExpertFeedForward(PreparedLayer& pl, const float* mlp_x, int rows);
  absl::Status PrepareExperts(const LayerWeights& lw, const std::string& prefix, PreparedLayer& pl,
                              int max_rows, WeightStaging& staging);
  // The shared expert's output added to proj_, scaled by its gate (qwen35moe) or as is.
  absl::Status SharedExpert(PreparedLayer& pl, const float* mlp_x, int rows);
  // The experts' activation of their up rows ([rows, 2 width] gate|up for gated kinds, else
  // [rows, width]): into `out` (returns true), or in place (squared ReLU: returns false).
  bool ActivateExperts(float* up, int rows, int width, float* out) const;
  // One of the experts' matrices (`layers`, quantized) for every expert with tokens, in one
  // parallel region: each expert's rows of `in` (pairs grouped by expert, in_width wide) into
  // the same rows of `out`.
  absl::Status RunExperts(const std::vector<ops::QuantizedLinear*>& layers, const float* in,
                          int in_width, float* out, int out_width);

  ModelConfig config_;
  int max_rows_ = 0;
  int q_dim_ = 0, kv_dim_ = 0, qkv_dim_ = 0;
  std::unique_ptr<ops::OnednnContext> context_;
  bool quantized_kernels_ = true;
  ops::HugePageArena quant_weights_;       // packed quantized weights (QuantizedLinear)
  ops::QuantScratch quant_scratch_;        // their quantized activations
  std::unique_ptr<ops::Rope> rope_;        // architectures with RoPE
  std::unique_ptr<ops::Rope> local_rope_;  // sliding-window layers' (Gemma), when it differs

  // ---- immutable weights ----
  std::shared_ptr<const WeightStorage> storage_;  // owns token_embedding_'s bytes
  TensorView token_embedding_;                    // [vocab, dim] as in the file

  std::vector<float> position_embedding_;                    // [context, dim] (gpt2, bert)
  std::vector<float> token_type_row_;                        // [dim] token type 0 (encoders)
  std::vector<float> embedding_norm_, embedding_norm_bias_;  // [dim] (encoders)
  std::vector<float> output_norm_, output_norm_bias_;        // [dim]
  std::vector<PreparedLayer> layers_;
  std::unique_ptr<ops::LinearLayer> lm_head_;  // [dim] -> [vocab]; null in encoders

  // ---- scratch, rows = max_batch_tokens ----
  std::vector<float> x_;           // [rows, dim] residual stream
  std::vector<float> xn_;          // [rows, dim] normalized
  std::vector<float> hidden_out_;  // [hidden rows, dim] output-normed (embeddings); grows once
  std::vector<float> qkv_;         // [rows, q_dim + 2 kv_dim]
  std::vector<float> gated_qkv_;   // [rows, 2 q_dim + 2 kv_dim] with the output gate, else empty
  std::vector<float> attn_gate_;   // [rows, q_dim] its gates
  // Gated DeltaNet: the input projections, their convolution, each token's log-decay and beta
  // per value head, and the recurrence's output (then normed and gated). Short convolutions:
  // b | c | x in ssm_proj_, b * x and then the gated output in ssm_core_, the convolution in
  // ssm_conv_ (each sized for the widest of the model's recurrent layers).
  std::vector<float> ssm_proj_;  // [rows, conv channels + value_dim]
  std::vector<float> ssm_ba_;    // [rows, 2 v_heads] beta | alpha projections
  std::vector<float> ssm_conv_;  // [rows, conv channels]
  std::vector<float> ssm_gb_;    // [rows, 2 v_heads] g | beta
  std::vector<float> ssm_core_;  // [rows, value_dim]
  std::vector<float> att_;       // [rows, q_dim]
  std::vector<float> proj_;      // [rows, dim] (output of wo / down)
  std::vector<float> hidden_;    // [rows, 2 hidden] (gate|up, or gelu(up))
  std::vector<float> act_;       // [rows, hidden] silu(gate) * up, or gelu(gate) * up
  std::vector<float> scores_;    // [threads, context] attention probabilities
  // Mixture of experts: router scores, each token's experts and weights, the (token, rank) pairs
  // grouped by expert, and per pair its input row, gate|up, activation and output rows.
  std::vector<float> router_logits_;   // [rows, experts]
  std::vector<int> selected_;          // [rows, used]
  std::vector<float> expert_weights_;  // [rows, used]
  std::vector<int> routed_;            // [rows * used] (token * used + rank), grouped by expert
  std::vector<int> grouped_at_;        // [rows * used] where each pair is in routed_
  std::vector<int> expert_starts_;     // [experts + 1] offsets into routed_
  std::vector<int> expert_next_;       // [experts] where the next pair of each goes
  std::vector<float> expert_in_;       // [rows * used, dim]
  std::vector<float> expert_hidden_;   // [rows * used, 2 width] gate|up
  std::vector<float> expert_act_;      // [rows * used, width]
  std::vector<float> expert_out_;      // [rows * used, dim]
  std::vector<float> shared_hidden_;   // [rows, 2 shared width] the shared expert's gate|up
  std::vector<float> shared_act_;      // [rows, shared width]
  std::vector<float> shared_out_;      // [rows, dim]
  std::vector<ops::QuantScratch> expert_scratch_;  // [experts] quantized inputs of RunMany
  std::vector<ops::QuantizedLinear::Call> expert_calls_;
  std::vector<float> logits_;  // [rows wanted, vocab], grown on demand
};

}  // namespace textgen::model
