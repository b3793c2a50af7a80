#include "model/kernels/gated_delta_net.h"

#include <cmath>
#include <cstring>

#include "model/kernels/fast_math.h"
#include "model/kernels/simd.h"

namespace textgen::model::ops {
namespace {

constexpr int kMaxKernel = 16;  // the loader refuses wider convolutions

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

// One output row: the window's rows (oldest first) weighed tap by tap, then SiLU.
TEXTGEN_SIMD_CLONES void ConvRow(const float* const* window, const float* weights, int kernel,
                                 int channels, int begin, int end, float* out) {
#pragma omp simd
  for (int c = begin; c < end; ++c) {
    float sum = 0.0f;
    for (int j = 0; j < kernel; ++j)
      sum += weights[static_cast<size_t>(j) * channels + c] * window[j][c];
    out[c] = sum / (1.0f + FastExp(-sum));
  }
}

void CausalConvSilu(const float* in, int in_stride, int rows, const float* weights, int kernel,
                    int channels, int begin, int end, float* state, float* out, int out_stride) {
  const int history = kernel - 1;
  // Row r of the sequence's inputs from the chunk's start - history: the state's, then the
  // chunk's.
  const auto input = [&](int r) -> const float* {
    return r < history ? state + static_cast<size_t>(r) * channels
                       : in + static_cast<size_t>(r - history) * in_stride;
  };
  const float* window[kMaxKernel];
  for (int t = 0; t < rows; ++t) {
    for (int j = 0; j < kernel; ++j) window[j] = input(t + j);
    ConvRow(window, weights, kernel, channels, begin, end,
            out + static_cast<size_t>(t) * out_stride);
  }
  // The last `history` inputs become the state (a short chunk keeps some of the old ones:
  // copied oldest first, so a row is read before it is overwritten).
  for (int j = 0; j < history; ++j) {
    const float* from = input(rows + j);
    float* to = state + static_cast<size_t>(j) * channels;
    if (from != to) std::memcpy(to + begin, from + begin, sizeof(float) * (end - begin));
  }
}

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
