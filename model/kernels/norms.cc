#include "model/kernels/norms.h"

#include <cmath>
#include <cstdint>

#include "model/kernels/simd.h"

namespace textgen::model::ops {
namespace {

constexpr int64_t kParallelMin = 1 << 14;

TEXTGEN_SIMD_CLONES void RmsNormRow(const float* x, int dim, const float* w, float eps,
                                    float* out) {
  float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
  for (int i = 0; i < dim; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
  for (int i = 0; i < dim; ++i) out[i] = x[i] * scale * w[i];
}

TEXTGEN_SIMD_CLONES void LayerNormRow(const float* x, int dim, const float* w, const float* b,
                                      float eps, float* out) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < dim; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(dim);
  float var = 0.0f;
#pragma omp simd reduction(+ : var)
  for (int i = 0; i < dim; ++i) var += (x[i] - mean) * (x[i] - mean);
  const float scale = 1.0f / std::sqrt(var / static_cast<float>(dim) + eps);
  for (int i = 0; i < dim; ++i) out[i] = (x[i] - mean) * scale * w[i] + b[i];
}

}  // namespace

void RmsNorm(const float* x, int rows, int dim, const float* weight, float eps, float* out) {
#pragma omp parallel for schedule(static) if (int64_t{rows} * dim >= kParallelMin)
  for (int r = 0; r < rows; ++r) {
    const int64_t off = static_cast<int64_t>(r) * dim;
    RmsNormRow(x + off, dim, weight, eps, out + off);
  }
}

void LayerNorm(const float* x, int rows, int dim, const float* weight, const float* bias, float eps,
               float* out) {
#pragma omp parallel for schedule(static) if (int64_t{rows} * dim >= kParallelMin)
  for (int r = 0; r < rows; ++r) {
    const int64_t off = static_cast<int64_t>(r) * dim;
    LayerNormRow(x + off, dim, weight, bias, eps, out + off);
  }
}

}  // namespace textgen::model::ops
