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
     .rope_freq_factors = true},
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
     .rope_freq_factors = false},
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
     .rope_freq_factors = false},
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
     .rope_freq_factors = false},
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
     .rope_freq_factors = true},
};

static_assert(std::size(kSpecs) == static_cast<size_t>(Architecture::kPhi3) + 1,
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
