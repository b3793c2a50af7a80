#include "model/kernels/rope.h"

#include <cmath>
#include <cstdint>

namespace textgen::model::ops {

Rope::Rope(int context_length, int head_dim, int rope_dim, float theta, RopeLayout layout,
           const std::vector<float>& freq_factors, float freq_scale, float attn_factor)
    : head_dim_(head_dim), rope_dim_(rope_dim), layout_(layout) {
  const int half = rope_dim / 2;
  cos_.resize(static_cast<size_t>(context_length) * half);
  sin_.resize(cos_.size());
  for (int p = 0; p < context_length; ++p) {
    for (int i = 0; i < half; ++i) {
      double freq = std::pow(static_cast<double>(theta), -2.0 * i / rope_dim);
      if (!freq_factors.empty()) freq /= freq_factors[i];
      const double angle = p * static_cast<double>(freq_scale) * freq;
      cos_[static_cast<size_t>(p) * half + i] = static_cast<float>(attn_factor * std::cos(angle));
      sin_[static_cast<size_t>(p) * half + i] = static_cast<float>(attn_factor * std::sin(angle));
    }
  }
}

void Rope::Apply(float* x, int rows, int row_stride, const int* positions, int n_heads) const {
  const int half = rope_dim_ / 2;
  // Adjacent pairs rotate (2i, 2i+1); NeoX rotates (i, i + rope_dim/2).
  const int stride = layout_ == RopeLayout::kNeox ? 1 : 2;
  const int partner = layout_ == RopeLayout::kNeox ? half : 1;
#pragma omp parallel for schedule(static) if (int64_t{rows} * n_heads * head_dim_ >= (1 << 15))
  for (int r = 0; r < rows; ++r) {
    const float* c = cos_.data() + static_cast<size_t>(positions[r]) * half;
    const float* s = sin_.data() + static_cast<size_t>(positions[r]) * half;
    float* row = x + static_cast<int64_t>(r) * row_stride;
    for (int h = 0; h < n_heads; ++h) {
      float* head = row + h * head_dim_;
      for (int i = 0; i < half; ++i) {
        float* a = head + i * stride;
        float* b = a + partner;
        const float x0 = *a, x1 = *b;
        *a = x0 * c[i] - x1 * s[i];
        *b = x0 * s[i] + x1 * c[i];
      }
    }
  }
}

}  // namespace textgen::model::ops
