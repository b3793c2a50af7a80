#pragma once

// The architectures textgen runs (decoders, and BERT-family encoders for embeddings), each
// described as data: which tensors a GGUF file of it holds, which norm, RoPE layout and
// feed-forward it uses, and which extras it has. The loader reads a file by its description and the
// transformer computes from it; there is one forward pass for all of them. To add an architecture,
// add a row to the table in architectures.cc (and, only if it needs a new kind of step, a flag here
// and its use in model/runtime/transformer.cc). Immutable; thread-safe.

#include <string_view>
#include <vector>

#include "model/arch/model_config.h"

namespace textgen::model {

enum class NormKind { kRms, kLayer };

// The feed-forward block: SwiGLU down(silu(gate(x)) * up(x)), GeGLU down(gelu_tanh(gate(x)) *
// up(x)) (Gemma), GPT-2's down(gelu_tanh(up(x) + b)) + b, gpt-oss's clamped SwiGLU
// down(g * sigmoid(1.702 g) * (clamp(up(x), -7, 7) + 1)) with g = min(gate(x), 7), or
// Nemotron-H's squared ReLU down(relu(up(x) + b)^2) + b (no gate).
enum class FeedForwardKind { kSwiGlu, kGeGlu, kGelu, kSwiGluOai, kReluSquared };

// Whether a feed-forward has a gate projection (act(gate(x)) * up(x)).
inline bool IsGatedFeedForward(FeedForwardKind kind) {
  return kind != FeedForwardKind::kGelu && kind != FeedForwardKind::kReluSquared;
}

// Whether attention layers rotate q and k: always, never (Nemotron-H: its Mamba2 layers carry
// position), or as {arch}.rope.scaling.finetuned says, true when absent (Granite hybrids:
// Granite 4.0-H writes false, Bamba true).
enum class RopeUse { kAlways, kNever, kFinetunedKey };

// Which layers attend over a sliding window, with llama.cpp's defaults for keys a file may
// leave out (attention.sliding_window, attention.sliding_window_pattern, rope.freq_base_swa).
struct SlidingWindowTraits {
  // Every n-th layer is global, the others slide (attention.sliding_window_pattern overrides);
  // 0: the architecture has no sliding layers.
  int pattern = 0;
  // Window when attention.sliding_window is absent; 0: no sliding window without the key.
  int default_window = 0;
  // Local layers' RoPE when rope.freq_base_swa is absent: the global base and scaling (Gemma 2,
  // gpt-oss), or base 10000 without scaling (Gemma 3).
  bool local_rope_inherits_global = false;
};

// Gemma's extras, with llama.cpp's defaults for keys a file may leave out.
struct GemmaTraits {
  bool enabled = false;
  // attn_logit_softcapping when absent; 0: attention scores are never capped.
  float default_attention_softcap = 0;
  float default_final_logit_softcap = 0;  // final_logit_softcapping when absent
  // The 27B model scales q.k by 1/sqrt(dim / heads), not 1/sqrt(head_dim); llama.cpp tells it
  // by its layer count.
  int layers_of_27b = 0;
};

// A shared expert every token runs beside the routed ones (ffn_{gate,up,down}_shexp, gate only
// for a gated feed-forward kind; its width expert_shared_feed_forward_length, else
// feed_forward_length): none; scaled by the sigmoid of a logit per token (ffn_gate_inp_shexp:
// qwen35moe); added as is (Nemotron-H); added as is where the file gives its width (Granite).
enum class SharedExpert { kNone, kGated, kAlways, kWhenSized };

// Whether a file may replace the dense feed-forward by a mixture of experts
// ({arch}.expert_count > 0, ffn_gate_inp and the stacked ffn_{gate,up,down}_exps tensors).
struct ExpertTraits {
  bool allowed = false;   // Mixtral-style llama files
  bool required = false;  // qwen3moe, gpt-oss
  // The expert width when expert_feed_forward_length is absent: feed_forward_length, divided by
  // the experts used per token when true (qwen3moe, as llama.cpp does).
  bool width_divides_by_used = false;
  // The router and every expert's matrices carry biases (ffn_gate_inp.bias, ffn_*_exps.bias).
  bool biases = false;
  // How the chosen experts are weighted (ModelConfig::expert_gating); with gating_from_key, as
  // {arch}.expert_gating_func says (llama.cpp's numbering: 1 softmax, 2 sigmoid, 3 softmax of
  // the chosen), this when absent.
  ExpertGating gating = ExpertGating::kSoftmax;
  bool gating_from_key = false;
  // exp_probs_b.bias: per expert, added to the probabilities to choose (not weigh) them.
  bool selection_bias = false;
  // {arch}.expert_weights_norm (default false) and .expert_weights_scale are read (Nemotron-H);
  // else softmax weights are renormalized and none is scaled.
  bool weights_keys = false;
  // {arch}.leading_dense_block_count: the first layers keep a dense feed-forward (LFM2).
  bool leading_dense_key = false;
  SharedExpert shared_expert = SharedExpert::kNone;
};

// How a converter lays out a Gated DeltaNet layer's tensors. Qwen3.5: value heads tiled over
// the key heads, ssm_beta and ssm_alpha apart. Qwen3-Next: Hugging Face's grouped value heads,
// and ssm_ba holding per key head its value heads' beta rows then their alpha rows;
// files converted before llama.cpp split ssm_in hold it (per key head q, k, v, z) instead of
// attn_qkv and attn_gate.
enum class DeltaNetLayout { kQwen35, kQwen3Next };

// Where a block's norms sit: before each sublayer, on its input (pre-norm decoders), or after
// the residual add, on the sum (BERT's post-norm: x = norm(x + sublayer(x))).
enum class NormPlacement { kBeforeSublayer, kAfterResidual };

struct ArchitectureSpec {
  Architecture architecture;
  const char* name;  // general.architecture, the prefix of its metadata keys
  NormKind norm;
  FeedForwardKind feed_forward;
  RopeLayout rope_layout;
  bool learned_positions;  // position_embd.weight added to the token embedding (no RoPE)
  bool fused_qkv;          // one attn_qkv tensor (rows q | k | v) instead of attn_q/k/v
  bool fused_gate_up;      // ffn_up holds gate and up (rows gate | up), no ffn_gate
  bool attention_bias;     // attn_{q,k,v}.bias: required when true, used when present otherwise
  bool output_bias;        // attn_output.bias, ffn_*.bias, norm biases (GPT-2)
  bool qk_norm;            // attn_q_norm / attn_k_norm: per-head RMSNorm of q and k before RoPE
  bool rope_freq_factors;  // may hold rope_freqs.weight (Llama 3.1+ frequency divisors) or
                           // rope_factors_long/short.weight (LongRoPE)
  bool post_norms;         // post_attention_norm / post_ffw_norm: RMSNorm of each sublayer's
                           // output before the residual add
  // attn_sinks.weight: one learned logit per head that joins the softmax of its scores (the
  // head may attend to nothing); gpt-oss.
  bool attention_sinks;
  // The pre-feed-forward norm's tensor name: ffn_norm, or post_attention_norm (gpt-oss).
  const char* ffn_norm_name;
  SlidingWindowTraits sliding;
  GemmaTraits gemma;     // embedding scale, softcaps
  ExpertTraits experts;  // mixture-of-experts feed-forward
  NormPlacement norm_placement;
  // The recurrent layer kind of a hybrid (its layers are this or attention, as the file's
  // layer list says: attention.recurrent_layers, else every full_attention_interval-th layer
  // attends); kAttention for pure transformers.
  LayerMixer recurrent_mixer;
  // Qwen3.5: the q projection carries a gate per head (rows [q_h | gate_h] head by head); the
  // attention output is multiplied by sigmoid(gate) before the output projection.
  bool attention_output_gate;
  // Encoders: a LayerNorm of the summed embeddings (token_embd_norm), token-type embeddings
  // (token_types), attention over the whole input unless {arch}.attention.causal says so,
  // and no LM head (no output_norm, no output): they embed, they do not generate.
  bool encoder;
  // The final norm's tensor name: output_norm, or token_embd_norm (LFM2's converter).
  const char* output_norm_name = "output_norm";
  // Which layers of a hybrid attend when the file lists none (attention.recurrent_layers):
  // every full_attention_interval-th, this many by default (Qwen); 0: the layers whose
  // attention.head_count_kv entry is non-zero (LFM2 writes one entry per layer, 0 for its
  // convolution layers).
  int default_attention_interval = 0;
  DeltaNetLayout delta_net_layout = DeltaNetLayout::kQwen35;
  // Nemotron-H: each block is a mixer or a feed-forward, never both. A block with a
  // feed_forward_length entry (one per layer) is a feed-forward, normed by its attn_norm; the
  // others are mixers, recurrent where their attention.head_count_kv entry is 0 too.
  bool single_sublayer_blocks = false;
  RopeUse rope_use = RopeUse::kAlways;
  // Granite's multipliers, each optional: {arch}.embedding_scale, .residual_scale (each
  // sublayer's output), .logit_scale (logits divided by it) and .attention.scale.
  bool granite_scales = false;
  // The RMSNorm epsilon falls back to attention.layer_norm_epsilon when
  // attention.layer_norm_rms_epsilon is absent (Nemotron-H, as llama.cpp reads it).
  bool rms_eps_falls_back = false;
};

// The description of `architecture`.
const ArchitectureSpec& SpecOf(Architecture architecture);

// The description named `name` (general.architecture), or nullptr.
const ArchitectureSpec* FindArchitecture(std::string_view name);

// Every supported general.architecture, comma-separated, for messages ("llama, gpt2, ...").
std::string SupportedArchitectureNames();
// Those whose files may hold a mixture of experts, likewise.
std::string MixtureArchitectureNames();

}  // namespace textgen::model
