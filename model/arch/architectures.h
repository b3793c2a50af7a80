#pragma once

// The decoder architectures textgen runs, each described as data: which tensors a GGUF file of
// it holds, which norm, RoPE layout and feed-forward it uses, and which extras it has. The
// loader reads a file by its description and the transformer computes from it; there is one
// forward pass for all of them. To add an architecture, add a row to the table in
// architectures.cc (and, only if it needs a new kind of step, a flag here and its use in
// model/transformer.cc). Immutable; thread-safe.

#include <string_view>
#include <vector>

#include "model/model_config.h"

namespace textgen::model {

enum class NormKind { kRms, kLayer };

// The feed-forward block: SwiGLU down(silu(gate(x)) * up(x)), or GPT-2's
// down(gelu_tanh(up(x) + b)) + b.
enum class FeedForwardKind { kSwiGlu, kGelu };

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
};

// The description of `architecture`.
const ArchitectureSpec& SpecOf(Architecture architecture);

// The description named `name` (general.architecture), or nullptr.
const ArchitectureSpec* FindArchitecture(std::string_view name);

// "llama, gpt2, qwen2, qwen3": every supported general.architecture, for messages.
std::string SupportedArchitectureNames();

}  // namespace textgen::model
