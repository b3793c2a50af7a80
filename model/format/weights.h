#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/arch/tensor_table.h"

namespace textgen::model {

// Element type of a tensor as stored in the model file. The quantized types are ggml's block
// formats (model/format/block_formats.h has their layouts and sizes).
enum class DType {
  kF32,
  kF16,
  kBF16,
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kMXFP4,  // gpt-oss's experts: e2m1 codes with a power-of-two (e8m0) scale per 32
};

const char* DTypeName(DType dtype);

// A read-only view of one 2-D (or 1-D: rows == 1) tensor inside a loaded model file.
// Matrices are row-major [rows, cols] = [out_features, in_features], the PyTorch nn.Linear
// layout (GGUF lists dims innermost-first, so GGUF [in, out] becomes rows=out, cols=in).
// Quantized rows are stored as consecutive blocks (32 or 256 elements each).
// `data` points into memory owned by the LoadedModel (mmap or a dequantized buffer).
struct TensorView {
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;

  bool empty() const { return data == nullptr; }
  int64_t elements() const { return rows * cols; }
};

// Converts `tensor` to f32 into `out` (tensor.elements() floats). Works for every DType.
void ToFloat(const TensorView& tensor, float* out);
// The same into a new vector; empty for an absent (empty) view.
std::vector<float> ToFloatVector(const TensorView& tensor);

// Rows [begin, begin + count) of a matrix: a view, no copy.
TensorView RowsOf(const TensorView& matrix, int64_t begin, int64_t count);

// Expert `expert`'s matrix of a stack of `experts` (LayerWeights::gate_experts...): a view.
TensorView ExpertOf(const TensorView& stacked, int64_t experts, int64_t expert);

// The bytes `tensor` occupies.
size_t ByteSize(const TensorView& tensor);

// Owns the memory weight views point into (a file mapping, or buffers). Engines keep it alive
// for as long as they read views, and say when they are done with a range: a file mapping
// then gives those pages back, so loading does not hold the whole file resident next to the
// engine's own copy of the weights. Reading a range again stays valid. Thread-safe.
class WeightStorage {
 public:
  virtual ~WeightStorage() = default;
  // `data` lies inside this storage. The default keeps everything (owned buffers).
  virtual void DoneReading(const void* data, size_t bytes) const;
};

// Per-block weights. Empty views mean "absent" (e.g. biases in llama models).
struct LayerWeights {
  TensorView attn_norm;       // [1, dim]
  TensorView attn_norm_bias;  // [1, dim]      gpt2
  TensorView wq;              // [n_heads * head_dim, dim]
  TensorView wk;              // [n_kv_heads * head_dim, dim]
  TensorView wv;              // [n_kv_heads * head_dim, dim]
  TensorView bq, bk, bv;      // [1, out]       gpt2, qwen2 (optional in llama)
  TensorView q_norm, k_norm;  // [1, head_dim]  qwen3: per-head RMSNorm before RoPE
  TensorView wo;              // [dim, n_heads * head_dim]
  TensorView bo;              // [1, dim]       gpt2, gpt-oss
  TensorView attn_sinks;      // [1, n_heads]   gpt-oss: each head's sink logit
  TensorView ffn_norm;        // [1, dim]
  TensorView ffn_norm_bias;   // [1, dim]       gpt2
  TensorView w_gate;          // [hidden, dim]  llama (SwiGLU gate, "w1")
  TensorView w_up;            // [hidden, dim]  llama "w3", gpt2 c_fc
  TensorView b_up;            // [1, hidden]    gpt2
  TensorView w_down;          // [dim, hidden]  llama "w2", gpt2 c_proj
  TensorView b_down;          // [1, dim]       gpt2
  TensorView attn_post_norm;  // [1, dim]       gemma: RMSNorm of the attention output
  TensorView ffn_post_norm;   // [1, dim]       gemma: RMSNorm of the feed-forward output
  // Mixture of experts (instead of w_gate, w_up, w_down): the router and each expert's
  // matrices stacked, expert e's rows at [e * rows, (e + 1) * rows) (ExpertOf).
  TensorView router;        // [experts, dim]
  TensorView gate_experts;  // [experts * expert_hidden, dim]
  TensorView up_experts;    // [experts * expert_hidden, dim]
  TensorView down_experts;  // [experts * dim, expert_hidden]
  // Their biases (gpt-oss), a row per expert.
  TensorView router_bias;        // [1, experts]
  TensorView gate_experts_bias;  // [experts, expert_hidden]
  TensorView up_experts_bias;    // [experts, expert_hidden]
  TensorView down_experts_bias;  // [experts, dim]
  // Gated DeltaNet layers (instead of the attention's tensors; see DeltaNetShape). LFM2's
  // short-convolution layers use ssm_input [3 dim, dim] (b | c | x, shortconv.in_proj),
  // ssm_conv [dim, taps] (shortconv.conv) and ssm_output [dim, dim] (shortconv.out_proj).
  TensorView ssm_input;    // [conv channels (q | k | v), dim]   attn_qkv
  TensorView ssm_gate;     // [value_dim, dim]                   attn_gate (z)
  TensorView ssm_conv;     // [conv channels, conv_kernel]       ssm_conv1d
  TensorView ssm_dt_bias;  // [1, v_heads]                       ssm_dt.bias
  TensorView ssm_a;        // [1, v_heads]  -exp(A_log)           ssm_a
  TensorView ssm_beta;     // [v_heads, dim]
  TensorView ssm_alpha;    // [v_heads, dim]
  TensorView ssm_norm;     // [1, head_v_dim]
  TensorView ssm_output;   // [dim, value_dim]                   ssm_out
  // Qwen3-Next's fused forms, instead of ssm_beta | ssm_alpha and ssm_input | ssm_gate.
  TensorView ssm_beta_alpha;  // [2 v_heads, dim] per key head: betas, alphas
  TensorView ssm_qkvz;        // [2 key_dim + 2 value_dim, dim] per key head: q, k, v, z
  // Mamba2 layers use ssm_input [z | x B C | dt rows, dim] (ssm_in), ssm_conv, ssm_dt_bias,
  // ssm_a, ssm_norm [groups, inner / groups] and ssm_output [dim, inner], and these:
  TensorView ssm_conv_bias;  // [conv channels]                    ssm_conv1d.bias
  TensorView ssm_d;          // [heads, 1]  the skip D             ssm_d
  // Mixtures with a selection bias: [1, experts] added to the router's probabilities to
  // choose experts (exp_probs_b.bias).
  TensorView expert_selection_bias;
  // A gated shared expert (qwen35moe).
  TensorView shared_expert_gate;  // [1, dim]  ffn_gate_inp_shexp
  TensorView shared_gate;         // [shared width, dim]
  TensorView shared_up;           // [shared width, dim]
  TensorView shared_down;         // [dim, shared width]
};

struct ModelWeights {
  TensorView token_embedding;     // [vocab, dim]
  TensorView position_embedding;  // [context, dim]  gpt2, bert
  TensorView token_types;         // [token types, dim]  encoders (row 0 is added)
  TensorView embedding_norm;      // [1, dim]  encoders: LayerNorm of the summed embeddings
  TensorView embedding_norm_bias;
  std::vector<LayerWeights> layers;
  TensorView output_norm;       // [1, dim]  (absent in encoders)
  TensorView output_norm_bias;  // [1, dim]  gpt2
  TensorView output;            // [vocab, dim]; == token_embedding when tied; encoders: none
  TensorView rope_freqs;        // [1, rope_dim / 2] llama (optional): frequency divisors
  TensorView rope_factors_long, rope_factors_short;  // [1, rope_dim / 2] phi3 LongRoPE (optional)
};

// The view `slot` names: of layer `layer` for a per-layer slot (model/arch/tensor_table.h).
TensorView& WeightOf(ModelWeights& weights, int layer, WeightSlot slot);
const TensorView& WeightOf(const ModelWeights& weights, int layer, WeightSlot slot);

}  // namespace textgen::model
