#include "model/kernels/activations.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/kernels/fast_math.h"
#include "model/kernels/simd.h"

namespace textgen::model::ops {
namespace {

// Below this many elements a parallel region costs more than it saves.
constexpr int64_t kParallelMin = 1 << 14;

TEXTGEN_SIMD_CLONES void ConvertSpan(const float* x, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &x[i], sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      out[i] = static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
    } else {
      out[i] = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
}

TEXTGEN_SIMD_CLONES void SiluMulRow(const float* gate, const float* up, int n, float* out) {
#pragma omp simd
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + FastExp(-g)) * up[i];
  }
}

TEXTGEN_SIMD_CLONES void SwiGluOaiMulRow(const float* gate, const float* up, int n, float* out) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;  // llama.cpp's (and the reference model's)
#pragma omp simd
  for (int i = 0; i < n; ++i) {
    const float g = gate[i] > kLimit ? kLimit : gate[i];  // (ternaries vectorize)
    float u = up[i] > kLimit ? kLimit : up[i];
    u = u < -kLimit ? -kLimit : u;
    out[i] = g / (1.0f + FastExp(-kAlpha * g)) * (u + 1.0f);
  }
}

// 0.5 v (1 + tanh(u)) written as v * sigmoid(2u), u = sqrt(2/pi) (v + 0.044715 v^3): one
// vectorizable exp instead of libm's scalar tanh, which took 35-45% of a BERT forward pass.
inline float GeluTanhOf(float v) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float u = kSqrt2OverPi * (v + 0.044715f * v * v * v);
  return v / (1.0f + FastExp(-2.0f * u));
}

TEXTGEN_SIMD_CLONES void GeluTanhSpan(const float* x, int64_t n, float* out) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = GeluTanhOf(x[i]);
}

TEXTGEN_SIMD_CLONES void GeluTanhMulRow(const float* gate, const float* up, int n, float* out) {
#pragma omp simd
  for (int i = 0; i < n; ++i) out[i] = GeluTanhOf(gate[i]) * up[i];
}

TEXTGEN_SIMD_CLONES void MulSigmoidSpan(const float* gate, int64_t n, float* x) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] *= 1.0f / (1.0f + FastExp(-gate[i]));
}

TEXTGEN_SIMD_CLONES void MulSiluSpan(const float* gate, int64_t n, float* x) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] *= gate[i] / (1.0f + FastExp(-gate[i]));
}

TEXTGEN_SIMD_CLONES void ReluSquaredSpan(int64_t n, float* x) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float r = x[i] > 0.0f ? x[i] : 0.0f;
    x[i] = r * r;
  }
}

TEXTGEN_SIMD_CLONES void ScaleSpan(float scale, int64_t n, float* x) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

TEXTGEN_SIMD_CLONES void AddSpan(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

// span_fn(begin, count) over [0, n) in chunks of 4096, in parallel when n is large enough
// (elementwise work: the result does not depend on the split).
template <typename SpanFn>
void ForEachChunk(int64_t n, SpanFn span_fn) {
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk;
    span_fn(begin, std::min(kChunk, n - begin));
  }
}

// row_fn(gate, up, hidden, out) over every row of a [rows, 2 * hidden] gate|up input; rows in
// parallel (each row is computed alike, whichever thread runs it).
template <typename RowFn>
void ForEachGatedRow(const float* gate_up, int rows, int hidden, float* out, RowFn row_fn) {
#pragma omp parallel for schedule(static) if (int64_t{rows} * hidden >= kParallelMin)
  for (int r = 0; r < rows; ++r) {
    const float* row = gate_up + static_cast<int64_t>(r) * 2 * hidden;
    row_fn(row, row + hidden, hidden, out + static_cast<int64_t>(r) * hidden);
  }
}

}  // namespace

void ConvertToBf16(const float* x, int64_t n, uint16_t* out) {
  ForEachChunk(n,
               [&](int64_t begin, int64_t count) { ConvertSpan(x + begin, count, out + begin); });
}

void SiluMul(const float* gate_up, int rows, int hidden, float* out) {
  ForEachGatedRow(gate_up, rows, hidden, out,
                  [](const float* gate, const float* up, int n, float* row_out) {
                    SiluMulRow(gate, up, n, row_out);  // a direct call keeps the SIMD clone
                  });
}

void SwiGluOaiMul(const float* gate_up, int rows, int hidden, float* out) {
  ForEachGatedRow(gate_up, rows, hidden, out,
                  [](const float* gate, const float* up, int n, float* row_out) {
                    SwiGluOaiMulRow(gate, up, n, row_out);  // a direct call keeps the SIMD clone
                  });
}

void GeluTanh(const float* x, int64_t n, float* out) {
  ForEachChunk(n,
               [&](int64_t begin, int64_t count) { GeluTanhSpan(x + begin, count, out + begin); });
}

void GeluTanhMul(const float* gate_up, int rows, int hidden, float* out) {
  ForEachGatedRow(gate_up, rows, hidden, out,
                  [](const float* gate, const float* up, int n, float* row_out) {
                    GeluTanhMulRow(gate, up, n, row_out);  // a direct call keeps the SIMD clone
                  });
}

void MulSigmoidInPlace(const float* gate, int64_t n, float* x) {
  ForEachChunk(
      n, [&](int64_t begin, int64_t count) { MulSigmoidSpan(gate + begin, count, x + begin); });
}

void MulSiluInPlace(const float* gate, int64_t n, float* x) {
  ForEachChunk(n,
               [&](int64_t begin, int64_t count) { MulSiluSpan(gate + begin, count, x + begin); });
}

void ReluSquaredInPlace(int64_t n, float* x) {
  ForEachChunk(n, [&](int64_t begin, int64_t count) { ReluSquaredSpan(count, x + begin); });
}

void ScaleInPlace(float scale, int64_t n, float* x) {
  ForEachChunk(n, [&](int64_t begin, int64_t count) { ScaleSpan(scale, count, x + begin); });
}

void SoftCap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

void AddInPlace(const float* x, int64_t n, float* y) {
  ForEachChunk(n, [&](int64_t begin, int64_t count) { AddSpan(x + begin, count, y + begin); });
}

}  // namespace textgen::model::ops
