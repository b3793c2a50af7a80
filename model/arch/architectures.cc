#include "model/arch/architectures.h"

#include <iterator>
#include <string>

namespace textgen::model {
namespace {

// One row per Architecture, in enum order.
constexpr ArchitectureSpec kSpecs[] = {
    // Llama 2/3.x, TinyLlama, Mistral, SmolLM2: llama.cpp's converter permutes Q and K so that
    // RoPE rotates adjacent pairs.
    {.architecture = Architecture::kLlama,
     .name = "llama",
     .norm = NormKind::kRms,
     .feed_forward = FeedForwardKind::kSwiGlu,
     .rope_layout = RopeLayout::kAdjacentPairs,
     .learned_positions = false,
     .fused_qkv = false,
     .fused_gate_up = false,
     .attention_bias = false,
     .output_bias = false,
     .qk_norm = false,
     .rope_freq_factors = true,
     .post_norms = false,
     .attention_sinks = false,
     .ffn_norm_name = "ffn_norm",
     .sliding = {},
     .gemma = {},
     .experts = {.allowed = true},  // Mixtral: expert_count > 0
     .norm_placement = NormPlacement::kBeforeSublayer,
     .encoder = false},
    {.architecture = Architecture::kGpt2,
     .name = "gpt2",
     .norm = NormKind::kLayer,
     .feed_forward = FeedForwardKind::kGelu,
     .rope_layout = RopeLayout::kAdjacentPairs,  // unused: no RoPE
     .learned_positions = true,
     .fused_qkv = true,
     .fused_gate_up = false,
     .attention_bias = true,
     .output_bias = true,
     .qk_norm = false,
     .rope_freq_factors = false,
     .post_norms = false,
     .attention_sinks = false,
     .ffn_norm_name = "ffn_norm",
     .sliding = {},
     .gemma = {},
     .experts = {},
     .norm_placement = NormPlacement::kBeforeSublayer,
     .encoder = false},
    // Qwen 2 / 2.5: Q, K, V biases; RoPE on halves (NeoX layout).
    {.architecture = Architecture::kQwen2,
     .name = "qwen2",
     .norm = NormKind::kRms,
     .feed_forward = FeedForwardKind::kSwiGlu,
     .rope_layout = RopeLayout::kNeox,
     .learned_positions = false,
     .fused_qkv = false,
     .fused_gate_up = false,
     .attention_bias = true,
     .output_bias = false,
     .qk_norm = false,
     .rope_freq_factors = false,
     .post_norms = false,
     .attention_sinks = false,
     .ffn_norm_name = "ffn_norm",
     .sliding = {},
     .gemma = {},
     .experts = {},
     .norm_placement = NormPlacement::kBeforeSublayer,
     .encoder = false},
    // Qwen 3: no biases; q and k RMS-normalized per head before RoPE; head size from key_length.
    {.architecture = Architecture::kQwen3,
     .name = "qwen3",
     .norm = NormKind::kRms,
     .feed_forward = FeedForwardKind::kSwiGlu,
     .rope_layout = RopeLayout::kNeox,
     .learned_positions = false,
     .fused_qkv = false,
     .fused_gate_up = false,
     .attention_bias = false,
     .output_bias = false,
     .qk_norm = true,
     .rope_freq_factors = false,
     .post_norms = false,
     .attention_sinks = false,
     .ffn_norm_name = "ffn_norm",
     .sliding = {},
     .gemma = {},
     .experts = {},
     .norm_placement = NormPlacement::kBeforeSublayer,
     .encoder = false},
    // Phi-3 / 3.5 mini: fused QKV and gate|up, NeoX RoPE, LongRoPE factors in 128k variants.
    {.architecture = Architecture::kPhi3,
     .name = "phi3",
     .norm = NormKind::kRms,
     .feed_forward = FeedForwardKind::kSwiGlu,
     .rope_layout = RopeLayout::kNeox,
     .learned_positions = false,
     .fused_qkv = true,
     .fused_gate_up = true,
     .attention_bias = false,
     .output_bias = false,
     .qk_norm = false,
     .rope_freq_factors = true,
     .post_norms = false,
     .attention_sinks = false,
     .ffn_norm_name = "ffn_norm",
     .sliding = {},
     .gemma = {},
     .experts = {},
     .norm_placement = NormPlacement::kBeforeSublayer,
     .encoder = false},
    // Gemma 2: GeGLU, norms after each sublayer too, every other layer sliding (window 4096),
    // attention scores capped at 50 and logits at 30, embeddings scaled by sqrt(dim).
    {.architecture = Architecture::kGemma2,
     .name = "gemma2",
     .norm = NormKind::kRms,
     .feed_forward = FeedForwardKind::kGeGlu,
     .rope_layout = RopeLayout::kNeox,
     .learned_positions = false,
     .fused_qkv = false,
     .fused_gate_up = false,
     .attention_bias = false,
     .output_bias = false,
     .qk_norm = false,
     .rope_freq_factors = false,
     .post_norms = true,
     .attention_sinks = false,
     .ffn_norm_name = "ffn_norm",
     .sliding = {.pattern = 2, .default_window = 4096, .local_rope_inherits_global = true},
     .gemma = {.enabled = true,
               .default_attention_softcap = 50.0f,
               .default_final_logit_softcap = 30.0f,
               .layers_of_27b = 46},
     .experts = {},
     .norm_placement = NormPlacement::kBeforeSublayer,
     .encoder = false},
    // Gemma 3: Gemma 2 with Q/K norms instead of attention softcapping; five sliding layers
    // (base 10000) for every global one (the file's base and scaling).
    {.architecture = Architecture::kGemma3,
     .name = "gemma3",
     .norm = NormKind::kRms,
     .feed_forward = FeedForwardKind::kGeGlu,
     .rope_layout = RopeLayout::kNeox,
     .learned_positions = false,
     .fused_qkv = false,
     .fused_gate_up = false,
     .attention_bias = false,
     .output_bias = false,
     .qk_norm = true,
     .rope_freq_factors = false,
     .post_norms = true,
     .attention_sinks = false,
     .ffn_norm_name = "ffn_norm",
     .sliding = {.pattern = 6, .default_window = 0, .local_rope_inherits_global = false},
     .gemma = {.enabled = true,
               .default_attention_softcap = 0.0f,
               .default_final_logit_softcap = 0.0f,
               .layers_of_27b = 62},
     .experts = {},
     .norm_placement = NormPlacement::kBeforeSublayer,
     .encoder = false},
    // BERT (BGE, MiniLM, E5...): learned absolute positions and token types, post-norm
    // LayerNorm blocks with biases everywhere, a GELU feed-forward; bidirectional.
    {.architecture = Architecture::kBert,
     .name = "bert",
     .norm = NormKind::kLayer,
     .feed_forward = FeedForwardKind::kGelu,
     .rope_layout = RopeLayout::kAdjacentPairs,  // unused: no RoPE
     .learned_positions = true,
     .fused_qkv = false,
     .fused_gate_up = false,
     .attention_bias = true,
     .output_bias = true,
     .qk_norm = false,
     .rope_freq_factors = false,
     .post_norms = false,
     .attention_sinks = false,
     .ffn_norm_name = "ffn_norm",
     .sliding = {},
     .gemma = {},
     .experts = {},
     .norm_placement = NormPlacement::kAfterResidual,
     .encoder = true},
    // nomic-embed-text: BERT's post-norm blocks with RoPE (NeoX) instead of learned positions,
    // fused QKV and a SwiGLU feed-forward, no biases.
    {.architecture = Architecture::kNomicBert,
     .name = "nomic-bert",
     .norm = NormKind::kLayer,
     .feed_forward = FeedForwardKind::kSwiGlu,
     .rope_layout = RopeLayout::kNeox,
     .learned_positions = false,
     .fused_qkv = true,
     .fused_gate_up = false,
     .attention_bias = false,
     .output_bias = false,
     .qk_norm = false,
     .rope_freq_factors = false,
     .post_norms = false,
     .attention_sinks = false,
     .ffn_norm_name = "ffn_norm",
     .sliding = {},
     .gemma = {},
     .experts = {},
     .norm_placement = NormPlacement::kAfterResidual,
     .encoder = true},
    // Qwen 3 MoE (30B-A3B, 235B-A22B, Coder): Qwen 3's attention, every feed-forward a mixture
    // of experts.
    {.architecture = Architecture::kQwen3Moe,
     .name = "qwen3moe",
     .norm = NormKind::kRms,
     .feed_forward = FeedForwardKind::kSwiGlu,
     .rope_layout = RopeLayout::kNeox,
     .learned_positions = false,
     .fused_qkv = false,
     .fused_gate_up = false,
     .attention_bias = false,
     .output_bias = false,
     .qk_norm = true,
     .rope_freq_factors = false,
     .post_norms = false,
     .attention_sinks = false,
     .ffn_norm_name = "ffn_norm",
     .sliding = {},
     .gemma = {},
     .experts = {.allowed = true, .required = true, .width_divides_by_used = true},
     .norm_placement = NormPlacement::kBeforeSublayer,
     .encoder = false},
    // gpt-oss (20b, 120b): every feed-forward a mixture of experts with biases, weighted by a
    // softmax over the chosen experts' logits, through a clamped SwiGLU; attention with biases
    // and a learned sink logit per head; every other layer slides (window 128 in the real
    // models); YaRN. The feed-forward's norm is named post_attention_norm.
    {.architecture = Architecture::kGptOss,
     .name = "gpt-oss",
     .norm = NormKind::kRms,
     .feed_forward = FeedForwardKind::kSwiGluOai,
     .rope_layout = RopeLayout::kNeox,
     .learned_positions = false,
     .fused_qkv = false,
     .fused_gate_up = false,
     .attention_bias = false,  // used when present, as llama.cpp: the real models have them
     .output_bias = true,      // attn_output.bias
     .qk_norm = false,
     .rope_freq_factors = false,
     .post_norms = false,
     .attention_sinks = true,
     .ffn_norm_name = "post_attention_norm",
     .sliding = {.pattern = 2, .default_window = 0, .local_rope_inherits_global = true},
     .gemma = {},
     .experts = {.allowed = true,
                 .required = true,
                 .width_divides_by_used = false,
                 .biases = true,
                 .softmax_over_chosen = true},
     .norm_placement = NormPlacement::kBeforeSublayer,
     .encoder = false},
};

static_assert(std::size(kSpecs) == static_cast<size_t>(Architecture::kGptOss) + 1,
              "one spec per Architecture, in enum order");

}  // namespace

const ArchitectureSpec& SpecOf(Architecture architecture) {
  return kSpecs[static_cast<int>(architecture)];
}

const ArchitectureSpec* FindArchitecture(std::string_view name) {
  for (const ArchitectureSpec& spec : kSpecs) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

std::string SupportedArchitectureNames() {
  std::string names;
  for (const ArchitectureSpec& spec : kSpecs) {
    if (!names.empty()) names += ", ";
    names += spec.name;
  }
  return names;
}

}  // namespace textgen::model
