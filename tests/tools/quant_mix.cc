#include "tests/tools/quant_mix.h"

#include <charconv>
#include <utility>

namespace textgen::model {
namespace {

// The tensor roles whose type the K-quant mixes change, matched on the name as llama-quantize
// matches them.
enum class Role { kOutput, kTokenEmbd, kAttnV, kAttnK, kAttnOutput, kFfnDown, kOther };

bool Has(std::string_view name, std::string_view part) {
  return name.find(part) != std::string_view::npos;
}

Role RoleOf(std::string_view name) {
  if (name == "output.weight") return Role::kOutput;
  if (name == "token_embd.weight") return Role::kTokenEmbd;
  // A fused QKV is treated as V: the more sensitive part decides.
  if (Has(name, "attn_qkv.weight") || Has(name, "attn_v.weight")) {
    return Role::kAttnV;
  }
  if (Has(name, "attn_k.weight")) return Role::kAttnK;
  if (Has(name, "attn_output.weight")) return Role::kAttnOutput;
  if (Has(name, "ffn_down")) return Role::kFfnDown;
  return Role::kOther;
}

// "blk.N." -> N; -1 for tensors outside the layers.
int LayerOf(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int layer = -1;
  std::from_chars(name.data() + 4, name.data() + name.size(), layer);
  return layer;
}

// The first and last eighth of the layers and every third one between them get more bits.
bool UseMoreBits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

bool IsKQuant(DType t) { return t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K; }

// Rows that are not whole 256-element super-blocks take the nearest 32-block type.
DType FitToColumns(DType t, int64_t columns) {
  if (!IsKQuant(t) || columns % 256 == 0) return t;
  switch (t) {
    case DType::kQ4_K:
      return DType::kQ5_0;
    case DType::kQ5_K:
      return DType::kQ5_1;
    default:
      return DType::kQ8_0;
  }
}

// The ordinal of the tensor of `layer` among those of `layers` (llama-quantize counts tensors,
// not layers; empty: every layer holds one), and how many there are.
std::pair<int, int> OrdinalAmong(const std::vector<bool>& layers, int layer, int n_layers) {
  if (layers.empty()) return {layer, n_layers};
  int index = 0, count = 0;
  for (int l = 0; l < static_cast<int>(layers.size()); ++l) {
    if (!layers[l]) continue;
    if (l < layer) ++index;
    ++count;
  }
  return {index, count};
}

// Before FitToColumns, which turns a ragged tensor's Q6_K into Q8_0.
DType KQuantMediumType(DType base, const QuantMixShape& shape, Role role, int layer) {
  // Mixtral-like models (exactly 8 experts) spend a little more on attention.
  const bool eight_experts = shape.n_experts == 8;
  switch (role) {
    case Role::kOutput:
      return DType::kQ6_K;
    case Role::kTokenEmbd:
      return shape.has_output ? base : DType::kQ6_K;
    case Role::kAttnV:
      if (eight_experts) return DType::kQ8_0;
      {
        const auto [index, count] = OrdinalAmong(shape.value_layers, layer, shape.n_layers);
        return UseMoreBits(index, count) ? DType::kQ6_K : base;
      }
    case Role::kAttnK:
      return eight_experts ? DType::kQ8_0 : base;
    case Role::kAttnOutput:
      return eight_experts && base == DType::kQ4_K ? DType::kQ5_K : base;
    case Role::kFfnDown: {
      // The ffn_down tensor's ordinal against the layer count (a mixture's: its layer).
      const int index = shape.n_experts > 1
                            ? layer
                            : OrdinalAmong(shape.ffn_down_layers, layer, shape.n_layers).first;
      return UseMoreBits(index, shape.n_layers) ? DType::kQ6_K : base;
    }
    case Role::kOther:
      return base;
  }
  return base;
}

}  // namespace

DType MixedTensorType(QuantMix mix, DType base, const QuantMixShape& shape, std::string_view name,
                      int64_t columns, bool stacked_experts) {
  switch (mix) {
    case QuantMix::kNone:
      return base;
    case QuantMix::kMxfp4Moe:
      return stacked_experts ? DType::kMXFP4 : DType::kQ8_0;
    case QuantMix::kKQuantMedium:
      return FitToColumns(KQuantMediumType(base, shape, RoleOf(name), LayerOf(name)), columns);
  }
  return base;
}

}  // namespace textgen::model
