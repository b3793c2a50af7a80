#include "model/kernels/skinny_matmul.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "model/kernels/cpu_features.h"

namespace textgen::model::ops {
namespace {

// The kernels carry their ISA as a function attribute (the project builds without -march);
// they run only after CpuSupportsSkinnyMatmul said yes.
#define TEXTGEN_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

constexpr int kVecsPerPanel = kSkinnyPanelColumns / 16;  // zmm registers per panel row
// Rows sharing one pass over a panel: 6 x 4 accumulators + 4 weight registers fit the 32 zmm.
constexpr int kMaxRowBlock = 6;

// Partial sums of one K chunk for MR rows are added into `tile` ([MR][64] floats): stored
// for the first chunk, added after it, as brgemm does.
template <int MR>
TEXTGEN_AVX512_BF16 inline void AccumulateChunk(__m512 (&c)[MR][kVecsPerPanel], bool first,
                                                float* tile) {
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVecsPerPanel; ++v) {
      float* t = tile + r * kSkinnyPanelColumns + v * 16;
      _mm512_store_ps(t, first ? c[r][v] : _mm512_add_ps(_mm512_load_ps(t), c[r][v]));
    }
  }
}

template <int MR>
TEXTGEN_AVX512_BF16 inline void ZeroChains(__m512 (&c)[MR][kVecsPerPanel]) {
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVecsPerPanel; ++v) c[r][v] = _mm512_setzero_ps();
  }
}

// tile[r, :] = sum over K chunks of (x[r, chunk] . W[chunk, panel columns]) for MR rows.
template <int MR>
TEXTGEN_AVX512_BF16 void PanelF32(const float* x, int ldx, const float* panel, int k, int k_chunk,
                                  float* tile) {
  for (int k0 = 0; k0 < k; k0 += k_chunk) {
    const int k1 = std::min(k, k0 + k_chunk);
    __m512 c[MR][kVecsPerPanel];
    ZeroChains<MR>(c);
    const float* wp = panel + static_cast<int64_t>(k0) * kSkinnyPanelColumns;
    for (int kk = k0; kk < k1; ++kk, wp += kSkinnyPanelColumns) {
      const __m512 b0 = _mm512_load_ps(wp);
      const __m512 b1 = _mm512_load_ps(wp + 16);
      const __m512 b2 = _mm512_load_ps(wp + 32);
      const __m512 b3 = _mm512_load_ps(wp + 48);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m512 a = _mm512_set1_ps(x[static_cast<int64_t>(r) * ldx + kk]);
        c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
        c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
        c[r][2] = _mm512_fmadd_ps(a, b2, c[r][2]);
        c[r][3] = _mm512_fmadd_ps(a, b3, c[r][3]);
      }
    }
    AccumulateChunk<MR>(c, k0 == 0, tile);
  }
}

// The bf16 twin: weights hold k pairs per column, and VDPBF16PS adds one pair per step.
template <int MR>
TEXTGEN_AVX512_BF16 void PanelBf16(const uint16_t* x, int ldx, const uint16_t* panel, int k,
                                   int k_chunk, float* tile) {
  for (int k0 = 0; k0 < k; k0 += k_chunk) {
    const int k1 = std::min(k, k0 + k_chunk);
    __m512 c[MR][kVecsPerPanel];
    ZeroChains<MR>(c);
    // k0 is even (chunks are multiples of 32), so pairs line up with the packed weights.
    const uint16_t* wp = panel + static_cast<int64_t>(k0) * kSkinnyPanelColumns;
    for (int kk = k0; kk < k1; kk += 2, wp += 2 * kSkinnyPanelColumns) {
      const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(wp));
      const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(wp + 32));
      const __m512bh b2 = reinterpret_cast<__m512bh>(_mm512_load_si512(wp + 64));
      const __m512bh b3 = reinterpret_cast<__m512bh>(_mm512_load_si512(wp + 96));
      const bool odd_tail = kk + 1 >= k1;  // last element of an odd K pairs with zero
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const uint16_t* xr = x + static_cast<int64_t>(r) * ldx + kk;
        uint32_t pair = xr[0];
        if (!odd_tail) std::memcpy(&pair, xr, sizeof(pair));
        const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(pair)));
        c[r][0] = _mm512_dpbf16_ps(c[r][0], a, b0);
        c[r][1] = _mm512_dpbf16_ps(c[r][1], a, b1);
        c[r][2] = _mm512_dpbf16_ps(c[r][2], a, b2);
        c[r][3] = _mm512_dpbf16_ps(c[r][3], a, b3);
      }
    }
    AccumulateChunk<MR>(c, k0 == 0, tile);
  }
}

template <int MR>
TEXTGEN_AVX512_BF16 void Panel(const SkinnyWeights& w, const void* x, int64_t row0, int p,
                               float* tile) {
  if (w.bf16) {
    PanelBf16<MR>(static_cast<const uint16_t*>(x) + row0 * w.k, w.k,
                  static_cast<const uint16_t*>(w.data) + p * w.panel_stride, w.k, w.k_chunk, tile);
  } else {
    PanelF32<MR>(static_cast<const float*>(x) + row0 * w.k, w.k,
                 static_cast<const float*>(w.data) + p * w.panel_stride, w.k, w.k_chunk, tile);
  }
}

// One 64-column panel for all m rows, written to y (bias added after the chunk sums).
TEXTGEN_AVX512_BF16 void RunPanel(const SkinnyWeights& w, const void* x, int m, const float* bias,
                                  float* y, int p) {
  alignas(64) float tile[kMaxRowBlock * kSkinnyPanelColumns];
  const int col0 = p * kSkinnyPanelColumns;
  const int cols = std::min(kSkinnyPanelColumns, w.n - col0);
  for (int r0 = 0; r0 < m; r0 += kMaxRowBlock) {
    const int mr = std::min(kMaxRowBlock, m - r0);
    switch (mr) {
      case 1:
        Panel<1>(w, x, r0, p, tile);
        break;
      case 2:
        Panel<2>(w, x, r0, p, tile);
        break;
      case 3:
        Panel<3>(w, x, r0, p, tile);
        break;
      case 4:
        Panel<4>(w, x, r0, p, tile);
        break;
      case 5:
        Panel<5>(w, x, r0, p, tile);
        break;
      default:
        Panel<6>(w, x, r0, p, tile);
        break;
    }
    for (int r = 0; r < mr; ++r) {
      float* out = y + static_cast<int64_t>(r0 + r) * w.n + col0;
      const float* t = tile + r * kSkinnyPanelColumns;
      if (bias == nullptr) {
        std::memcpy(out, t, sizeof(float) * cols);
      } else {
        for (int j = 0; j < cols; ++j) out[j] = t[j] + bias[col0 + j];
      }
    }
  }
}

}  // namespace

bool CpuSupportsSkinnyMatmul(bool bf16) { return bf16 ? CpuHasAvx512Bf16() : CpuHasAvx512(); }

void SkinnyMatmul(const SkinnyWeights& w, const void* x, int m, const float* bias, float* y) {
  const int panels = (w.n + kSkinnyPanelColumns - 1) / kSkinnyPanelColumns;
  // Static split: each thread streams one contiguous run of panels.
#pragma omp parallel for schedule(static)
  for (int p = 0; p < panels; ++p) RunPanel(w, x, m, bias, y, p);
}

}  // namespace textgen::model::ops
