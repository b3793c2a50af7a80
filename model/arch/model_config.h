#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace textgen::model {

// The architecture families textgen runs (model/arch/architectures.h describes each).
enum class Architecture {
  kLlama,
  kGpt2,
  kQwen2,
  kQwen3,
  kPhi3,
  kGemma2,
  kGemma3,
  kBert,
  kNomicBert,
  kQwen3Moe,
  kGptOss,
  kQwen35,
  kQwen35Moe,
  kLfm2,
  kQwen3Next,
  kNemotronH,
  kGraniteHybrid,
  kNemotronHMoe,
  kLfm2Moe
};

// How RoPE pairs the dimensions of a head: llama2.c / GGUF "llama" rotate adjacent pairs
// (2i, 2i+1); NeoX-style models rotate (i, i + rope_dim/2).
enum class RopeLayout { kAdjacentPairs, kNeox };

// What mixes information across positions in a layer: attention over the sequence's K/V
// blocks, or a recurrent layer that folds every token into a fixed-size state the sequence
// carries instead (model/runtime/kv_cache.h keeps both).
enum class LayerMixer {
  kAttention,
  // Gated DeltaNet (Qwen3.5, Qwen3-Next): a causal convolution over the q|k|v projections,
  // then per value head the gated delta rule S = exp(g) S + beta (v - S k) k^T, read out by q,
  // RMS-normed and gated by silu(z).
  kGatedDeltaNet,
  // LFM2's gated short convolution: in_proj gives b | c | x per token, and the layer's output
  // is out_proj(c * conv(b * x)) with a depthwise causal convolution over the last
  // short_conv_kernel tokens (no activation).
  kShortConv,
  // Mamba2 (Nemotron-H, Granite 4.0-H): in_proj gives z | x B C | dt per token; a causal
  // convolution with bias and SiLU over x B C; per head the selective scan
  // S = exp(dt A) S + dt x B^T read out by C, plus D x; times silu(z), a grouped RMSNorm and
  // out_proj.
  kMamba2,
  // No mixer: a block that is only a feed-forward (Nemotron-H's MLP blocks).
  kNone,
};

// The widest causal convolution a recurrent layer may have (ssm.conv_kernel,
// shortconv.l_cache); the loader refuses wider ones, the kernel sizes its window by it.
inline constexpr int kMaxConvKernel = 16;

// The shape of a Gated DeltaNet layer (GGUF ssm.*: conv_kernel, state_size = the key head
// size, group_count = key heads, time_step_rank = value heads, inner_size = value width).
// Value head h reads key head h % k_heads where llama.cpp's converter tiles the heads (Qwen3.5),
// h / (v_heads / k_heads) where it keeps Hugging Face's grouped order (Qwen3-Next).
struct DeltaNetShape {
  int conv_kernel = 0;
  int k_heads = 0;
  int v_heads = 0;
  int head_k_dim = 0;
  int head_v_dim = 0;
  bool grouped_value_heads = false;

  int key_head(int value_head) const {
    return grouped_value_heads ? value_head / (v_heads / k_heads) : value_head % k_heads;
  }

  int key_dim() const { return k_heads * head_k_dim; }
  int value_dim() const { return v_heads * head_v_dim; }
  // Channels of the convolution: q | k | v.
  int conv_channels() const { return 2 * key_dim() + value_dim(); }
  // Floats of one sequence's state in one layer: the last conv_kernel - 1 inputs of the
  // convolution, then each value head's [head_v_dim, head_k_dim] matrix.
  int64_t state_floats() const {
    return int64_t{conv_kernel - 1} * conv_channels() + int64_t{v_heads} * head_v_dim * head_k_dim;
  }
};

// The shape of a Mamba2 layer (GGUF ssm.*: conv_kernel, inner_size, state_size, time_step_rank
// = heads, group_count = groups of B and C that the heads share in order).
struct Mamba2Shape {
  int conv_kernel = 0;
  int inner = 0;
  int state = 0;
  int heads = 0;
  int groups = 0;

  int head_dim() const { return inner / heads; }
  // The group of B and C head h reads (heads share them in consecutive runs).
  int group_of(int head) const { return head / (heads / groups); }
  int bc_width() const { return groups * state; }
  // Channels of the convolution: x | B | C.
  int conv_channels() const { return inner + 2 * bc_width(); }
  // Rows of in_proj: z | x B C | dt.
  int in_rows() const { return inner + conv_channels() + heads; }
  // Floats of one sequence's state in one layer: the last conv_kernel - 1 inputs of the
  // convolution, then per head its [head_dim][state] matrix.
  int64_t state_floats() const {
    return int64_t{conv_kernel - 1} * conv_channels() + int64_t{inner} * state;
  }
};

// How a mixture's router turns its logits into the chosen experts' weights: their softmax
// probabilities (renormalized), a softmax over the chosen logits only (gpt-oss), or each
// expert's sigmoid (Nemotron-H, LFM2: renormalized when the file says so).
enum class ExpertGating { kSoftmax, kSoftmaxOfChosen, kSigmoid };

// How an embedding is pooled from the final hidden states of an input's tokens (GGUF
// {arch}.pooling_type, llama.cpp's numbering: 0 none, 1 mean, 2 cls, 3 last).
enum class Pooling { kNone, kMean, kCls, kLast };
const char* PoolingName(Pooling pooling);

// Hyperparameters of a transformer (decoders, and the BERT-family encoders served for
// embeddings). Immutable after loading.
struct ModelConfig {
  Architecture architecture = Architecture::kLlama;
  int dim = 0;         // model width (embedding length)
  int hidden_dim = 0;  // MLP inner width (dense feed-forward)
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;  // == n_heads without grouped-query attention
  int head_dim = 0;    // per head: attention.key_length, else dim / n_heads
  int vocab_size = 0;
  int context_length = 0;  // maximum positions the model supports
  float norm_eps = 1e-5f;  // RMSNorm / LayerNorm epsilon
  // Rotary position embeddings (architectures without learned positions).
  float rope_theta = 10000.0f;
  int rope_dim = 0;  // dimensions of each head that are rotated (== head_dim usually)
  RopeLayout rope_layout = RopeLayout::kAdjacentPairs;
  // [rope_dim / 2] divisors of the rotation frequencies (GGUF rope_freqs.weight: Llama 3.1+
  // context extension); empty = none.
  std::vector<float> rope_freq_factors;
  float rope_freq_scale = 1.0f;  // linear scaling: positions are multiplied by this
  // YaRN (rope.scaling.type yarn): the context the model was trained at before it was scaled by
  // 1 / rope_freq_scale (rope.scaling.original_context_length); 0 = no YaRN (ops::Rope).
  int rope_yarn_original_context = 0;
  float rope_attn_factor = 1.0f;  // multiplies cos and sin (LongRoPE's attention scaling)
  // Layers that attend over a sliding window (Gemma, gpt-oss: the rest attend over everything),
  // with their own RoPE base and scaling. Empty = every layer is global.
  std::vector<bool> sliding_window_layers;  // [n_layers]
  int sliding_window = 0;                   // positions a local layer sees, itself included
  float rope_theta_local = 10000.0f;
  float rope_freq_scale_local = 1.0f;
  // q.k is multiplied by this (0: 1 / sqrt(head_dim)).
  float attention_scale = 0.0f;
  // cap * tanh(x / cap) of attention scores / final logits; 0 = none (Gemma 2).
  float attention_softcap = 0.0f;
  float final_logit_softcap = 0.0f;
  float embedding_scale = 1.0f;  // the token embedding is multiplied by this (Gemma: sqrt(dim))
  bool tied_output = false;      // output projection shares the token embedding
  // Each token attends to the positions before it (decoders); false: to every token of its
  // input ({arch}.attention.causal: BERT encoders), so an input is computed in one chunk.
  bool causal = true;
  int token_type_count = 0;  // rows of token_types.weight (encoders; row 0 is added)
  // Mixture of experts (qwen3moe, gpt-oss, Mixtral-style llama): each token's feed-forward is
  // the sum of `experts_used` of the `experts` gated experts (each expert_hidden_dim wide) that a
  // router picks for it, weighted as the architecture says (ExpertTraits). 0 experts: dense.
  int experts = 0;
  int experts_used = 0;
  int expert_hidden_dim = 0;
  // A shared expert every token runs beside the routed ones (qwen35moe: its SwiGLU output
  // times sigmoid(ffn_gate_inp_shexp . x); Granite, Nemotron-H: added as is); 0 = none.
  int shared_expert_hidden_dim = 0;
  ExpertGating expert_gating = ExpertGating::kSoftmax;
  // Sigmoid routers: the chosen weights renormalized to sum to 1 ({arch}.expert_weights_norm);
  // every router: then multiplied by expert_weights_scale.
  bool expert_weights_norm = true;
  float expert_weights_scale = 1.0f;
  // The first layers of a mixture that keep a dense feed-forward (leading_dense_block_count:
  // LFM2-8B-A1B).
  int leading_dense_layers = 0;
  // What each layer mixes with ([n_layers]; empty = attention everywhere), and the shape of
  // its recurrent layers.
  std::vector<LayerMixer> layer_mixers;
  DeltaNetShape delta_net;
  Mamba2Shape mamba2;
  int short_conv_kernel = 0;  // taps of a kShortConv layer's convolution (shortconv.l_cache)
  // Which layers have a feed-forward after their mixer ([n_layers]; empty = all). Nemotron-H's
  // blocks are each a mixer or a feed-forward.
  std::vector<bool> feed_forward_layers;
  // Attention layers rotate q and k (false: no positions at all, NoPE: Nemotron-H, Granite 4.0-H).
  bool rope = true;
  // Granite: each sublayer's output is multiplied by this before the residual add, and the
  // logits are divided by logit_scale.
  float residual_scale = 1.0f;
  float logit_scale = 1.0f;
  // Embedding models say how to pool ({arch}.pooling_type); kNone for generative models.
  Pooling pooling = Pooling::kNone;
  std::string name;  // general.name or file stem, for logs and GetModelInfo

  int kv_dim() const { return n_kv_heads * head_dim; }
  bool has_experts() const { return experts > 0; }
  bool layer_has_experts(int layer) const { return has_experts() && layer >= leading_dense_layers; }
  // Some feed-forward is dense (hidden_dim wide).
  bool has_dense_layers() const { return !has_experts() || leading_dense_layers > 0; }
  // The width of the feed-forward a token runs: an expert's, or the dense one's.
  int ffn_width() const { return has_experts() ? expert_hidden_dim : hidden_dim; }
  LayerMixer mixer(int layer) const {
    return layer_mixers.empty() ? LayerMixer::kAttention : layer_mixers[layer];
  }
  // Layers that keep K/V (the rest carry a recurrent state).
  int attention_layers() const;
  bool has_recurrent_layers() const { return recurrent_state_floats() > 0; }
  // Floats of one sequence's recurrent state in `layer` (0 for attention layers), and over
  // every layer (0 without recurrent layers).
  int64_t layer_state_floats(int layer) const;
  int64_t recurrent_state_floats() const;
  bool has_feed_forward(int layer) const {
    return feed_forward_layers.empty() || feed_forward_layers[layer];
  }
  bool is_sliding(int layer) const {
    return !sliding_window_layers.empty() && sliding_window_layers[layer];
  }
};

const char* ArchitectureName(Architecture architecture);

}  // namespace textgen::model
