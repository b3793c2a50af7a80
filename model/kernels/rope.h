#pragma once

#include <vector>

#include "model/arch/model_config.h"

namespace textgen::model::ops {

// Rotary position embedding: cos/sin tables computed once (in double, then rounded) and
// applied in place to the heads of each row. Immutable after construction; any thread.
class Rope {
 public:
  // Rotates the first `rope_dim` dims of each head by angle p * freq_scale * f_i, where
  // f_i = theta^(-2i/rope_dim) / freq_factors[i] (factors when given: [rope_dim / 2], Llama 3.1's
  // rope_freqs or LongRoPE's); cos and sin are multiplied by attn_factor (LongRoPE).
  Rope(int context_length, int head_dim, int rope_dim, float theta, RopeLayout layout,
       const std::vector<float>& freq_factors = {}, float freq_scale = 1.0f,
       float attn_factor = 1.0f);

  // Rotates `n_heads` heads of `head_dim` floats starting at x + r*row_stride for each of
  // `rows` rows, row r being at position positions[r] (< context_length).
  void Apply(float* x, int rows, int row_stride, const int* positions, int n_heads) const;

  int rope_dim() const { return rope_dim_; }

 private:
  int head_dim_;
  int rope_dim_;
  RopeLayout layout_;
  std::vector<float> cos_;  // [context_length, rope_dim / 2]
  std::vector<float> sin_;  // [context_length, rope_dim / 2]
};

}  // namespace textgen::model::ops
