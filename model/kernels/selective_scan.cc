#include "model/kernels/selective_scan.h"

#include <cstddef>

#include "model/kernels/simd.h"

namespace textgen::model::ops {
namespace {

// One row of the state: decays it, adds x dt B and reads it out with C.
TEXTGEN_SIMD_CLONES float UpdateRow(float* row, const float* b, const float* c, int n, float decay,
                                    float x_dt) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < n; ++i) {
    row[i] = row[i] * decay + b[i] * x_dt;
    sum += row[i] * c[i];
  }
  return sum;
}

}  // namespace

void SelectiveScanHead(const float* x, int x_stride, const float* b, const float* c, int bc_stride,
                       const float* dt, const float* decay, int dt_stride, float d, int rows,
                       int head_dim, int state_dim, float* state, float* out, int out_stride) {
  for (int t = 0; t < rows; ++t) {
    const float* xt = x + static_cast<size_t>(t) * x_stride;
    const float* bt = b + static_cast<size_t>(t) * bc_stride;
    const float* ct = c + static_cast<size_t>(t) * bc_stride;
    const float step = dt[static_cast<size_t>(t) * dt_stride];
    const float a = decay[static_cast<size_t>(t) * dt_stride];
    float* ot = out + static_cast<size_t>(t) * out_stride;
    for (int i = 0; i < head_dim; ++i) {
      const float y =
          UpdateRow(state + static_cast<size_t>(i) * state_dim, bt, ct, state_dim, a, xt[i] * step);
      ot[i] = y + xt[i] * d;
    }
  }
}

}  // namespace textgen::model::ops
