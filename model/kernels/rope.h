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
  // With `yarn_original_context` > 0, YaRN as llama.cpp applies it (beta_fast 32, beta_slow 1):
  // pair i turns by p * f_i * ((1 - e_i) freq_scale + e_i), where e_i ramps from 1 (kept:
  // pairs that turn more than 32 times over the original context) down to 0 (interpolated: less
  // than once), and cos and sin are also multiplied by 1 + 0.1 ln(1 / freq_scale).
  Rope(int context_length, int head_dim, int rope_dim, float theta, RopeLayout layout,
       const std::vector<float>& freq_factors = {}, float freq_scale = 1.0f,
       float attn_factor = 1.0f, int yarn_original_context = 0);

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
