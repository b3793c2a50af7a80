#include "model/kernels/gated_delta_net.h"

#include <cmath>

#include "model/kernels/simd.h"

namespace textgen::model::ops {
namespace {

TEXTGEN_SIMD_CLONES float Dot(const float* a, const float* b, int n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// One row of the state: decays it, takes its delta against k and reads it out with q.
TEXTGEN_SIMD_CLONES float UpdateRow(float* row, const float* k, const float* q, int dk, float decay,
                                    float v, float beta) {
  float sk = 0.0f;
#pragma omp simd reduction(+ : sk)
  for (int i = 0; i < dk; ++i) {
    row[i] *= decay;
    sk += row[i] * k[i];
  }
  const float d = (v - sk) * beta;
  float out = 0.0f;
#pragma omp simd reduction(+ : out)
  for (int i = 0; i < dk; ++i) {
    row[i] += d * k[i];
    out += row[i] * q[i];
  }
  return out;
}

}  // namespace

void GatedDeltaRuleHead(const float* q, const float* k, int qk_stride, const float* v, int v_stride,
                        const float* g, const float* beta, int gb_stride, int rows, int dk, int dv,
                        float scale, float* state, float* out, int out_stride) {
  for (int t = 0; t < rows; ++t) {
    const float* qt = q + static_cast<size_t>(t) * qk_stride;
    const float* kt = k + static_cast<size_t>(t) * qk_stride;
    const float* vt = v + static_cast<size_t>(t) * v_stride;
    const float decay = std::exp(g[static_cast<size_t>(t) * gb_stride]);
    const float b = beta[static_cast<size_t>(t) * gb_stride];
    float* ot = out + static_cast<size_t>(t) * out_stride;
    for (int j = 0; j < dv; ++j) {
      ot[j] = scale * UpdateRow(state + static_cast<size_t>(j) * dk, kt, qt, dk, decay, vt[j], b);
    }
  }
}

void L2NormInPlace(float* x, int n, float eps) {
  const float inv = 1.0f / std::sqrt(Dot(x, x, n) + eps);
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace textgen::model::ops
