#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "model/format/weights.h"

namespace textgen::model {

// llama.cpp's mixed quantizations: the type llama-quantize gives each tensor (its rules in
// src/llama-quant.cpp), so random files carry the bytes per type that downloaded files carry.
enum class QuantMix {
  kNone,          // every matrix in the spec's type
  kKQuantMedium,  // Q4_K_M / Q5_K_M, with the spec's type Q4_K / Q5_K as the base
  kMxfp4Moe,      // MXFP4_MOE: stacked experts MXFP4, every other matrix Q8_0
};

// What the rules look at: the model's layer and expert counts, whether an output.weight exists
// (without one, token_embd is the output and takes its type).
struct QuantMixShape {
  int n_layers = 0;
  int n_experts = 0;
  bool has_output = false;
  // The layers holding an attn_v or attn_qkv tensor, which llama-quantize counts on their own
  // for the "more bits" rule (LFM2's convolution layers hold none); empty: every layer.
  std::vector<bool> value_layers;
  // The layers holding an ffn_down (or ffn_down_exps) tensor, counted likewise (Nemotron-H's
  // mixer blocks hold none); empty: every layer.
  std::vector<bool> ffn_down_layers;
};

// The type of the matrix `name` (a GGUF tensor name, "blk.7.ffn_down_exps.weight") whose rows
// are `columns` wide, under `mix` with base type `base`. Only for tensors llama-quantize
// quantizes (not norms, biases, routers or position tables).
DType MixedTensorType(QuantMix mix, DType base, const QuantMixShape& shape, std::string_view name,
                      int64_t columns, bool stacked_experts);

}  // namespace textgen::model
