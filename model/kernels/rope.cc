#include "model/kernels/rope.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace textgen::model::ops {
namespace {

constexpr double kYarnBetaFast = 32, kYarnBetaSlow = 1;

// The pair index at which a frequency turns `turns` times over `context` positions (YaRN's
// correction dimension), as llama.cpp's ggml_rope_yarn_corr_dim.
double YarnCorrectionPair(int rope_dim, int context, double turns, double theta) {
  return rope_dim * std::log(context / (turns * 2 * std::numbers::pi)) / (2 * std::log(theta));
}

// Per pair: how much of the unscaled (extrapolated) frequency to keep, 1 below the correction
// range, 0 above it, linear between (llama.cpp's 1 - rope_yarn_ramp; Hugging Face's
// 1 - linear_ramp_factor).
std::vector<double> YarnKeptShares(int rope_dim, int original_context, double theta) {
  const double low = std::max(
      0.0, std::floor(YarnCorrectionPair(rope_dim, original_context, kYarnBetaFast, theta)));
  const double high = std::min<double>(
      rope_dim - 1,
      std::ceil(YarnCorrectionPair(rope_dim, original_context, kYarnBetaSlow, theta)));
  std::vector<double> kept(static_cast<size_t>(rope_dim / 2));
  for (int i = 0; i < rope_dim / 2; ++i) {
    const double y = (i - low) / std::max(0.001, high - low);
    kept[i] = 1 - std::clamp(y, 0.0, 1.0);
  }
  return kept;
}

}  // namespace

Rope::Rope(int context_length, int head_dim, int rope_dim, float theta, RopeLayout layout,
           const std::vector<float>& freq_factors, float freq_scale, float attn_factor,
           int yarn_original_context)
    : head_dim_(head_dim), rope_dim_(rope_dim), layout_(layout) {
  const int half = rope_dim / 2;
  cos_.resize(static_cast<size_t>(context_length) * half);
  sin_.resize(cos_.size());
  std::vector<double> scale(static_cast<size_t>(half), freq_scale);
  double magnitude = attn_factor;
  if (yarn_original_context > 0) {
    const std::vector<double> kept = YarnKeptShares(rope_dim, yarn_original_context, theta);
    for (int i = 0; i < half; ++i) scale[i] = (1 - kept[i]) * freq_scale + kept[i];
    magnitude *= 1 + 0.1 * std::log(1.0 / freq_scale);
  }
  for (int p = 0; p < context_length; ++p) {
    for (int i = 0; i < half; ++i) {
      double freq = std::pow(static_cast<double>(theta), -2.0 * i / rope_dim);
      if (!freq_factors.empty()) freq /= freq_factors[i];
      const double angle = p * scale[i] * freq;
      cos_[static_cast<size_t>(p) * half + i] = static_cast<float>(magnitude * std::cos(angle));
      sin_[static_cast<size_t>(p) * half + i] = static_cast<float>(magnitude * std::sin(angle));
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
