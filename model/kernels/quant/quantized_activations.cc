#include "model/kernels/quant/quantized_activations.h"

// GCC 12's AVX-512 headers start some results from _mm*_undefined_*(), which
// -Wmaybe-uninitialized flags once inlined: a known false positive (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>

#include "model/format/float16.h"

namespace textgen::model::ops {
namespace {

// Runs only where the quantized kernels run (AVX-512 with VNNI, checked by their callers).
#define TEXTGEN_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

// (maskz forms and no _mm512_reduce_*: GCC 12's unmasked ones trip -Wmaybe-uninitialized in
// its headers)

// Horizontal max and sum of 16 lanes (exact in any order: max, and integer sums).
TEXTGEN_AVX512 inline float LaneMax(__m512 v) { return _mm512_mask_reduce_max_ps(0xFFFF, v); }
TEXTGEN_AVX512 inline int32_t LaneSum(__m512i v) { return _mm512_mask_reduce_add_epi32(0xFFFF, v); }

// Quantizes one block of `block` (32 or 256) floats: codes, their 16-element sums, the scale.
TEXTGEN_AVX512 float QuantizeBlock(const float* x, int block, int8_t* codes, int32_t* sums16) {
  const __m512i magnitude_bits = _mm512_set1_epi32(0x7FFFFFFF);
  __m512 amax = _mm512_setzero_ps();
  for (int i = 0; i < block; i += 16) {
    const __m512i bits =
        _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + i)), magnitude_bits);
    amax = _mm512_max_ps(amax, _mm512_castsi512_ps(bits));
  }
  const float max_abs = LaneMax(amax);
  // A block of 32 keeps its scale in f16, as llama.cpp's block_q8_0 does (the codes come from
  // the f32 scale, as there): the dot products then match llama.cpp's to the last bit, so its
  // outputs are a tight reference. Q8_K (blocks of 256) keeps an f32 scale, as llama.cpp does.
  const float scale = block == 32 ? HalfToFloat(FloatToHalf(max_abs / 127.0f)) : max_abs / 127.0f;
  const __m512 inverse = _mm512_set1_ps(max_abs > 0.0f ? 127.0f / max_abs : 0.0f);
  for (int i = 0; i < block; i += 16) {
    const __m512i q =
        _mm512_maskz_cvt_roundps_epi32(0xFFFF, _mm512_mul_ps(_mm512_loadu_ps(x + i), inverse),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i clamped =
        _mm512_max_epi32(_mm512_min_epi32(q, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i),
                     _mm512_maskz_cvtepi32_epi8(0xFFFF, clamped));
    sums16[i / 16] = LaneSum(clamped);
  }
  return scale;
}

TEXTGEN_AVX512 void QuantizeRow(const float* x, int k, int block, int8_t* codes, float* scales,
                                int32_t* sums16, int32_t* pair_sums) {
  for (int b = 0; b < k / block; ++b) {
    scales[b] = QuantizeBlock(x + b * block, block, codes + b * block, sums16 + b * block / 16);
  }
  for (int i = 0; i < k / 64; ++i) {
    const int32_t even = sums16[4 * i] + sums16[4 * i + 1];
    const int32_t odd = sums16[4 * i + 2] + sums16[4 * i + 3];
    pair_sums[i] = static_cast<int32_t>((static_cast<uint32_t>(odd) << 16) |
                                        (static_cast<uint32_t>(even) & 0xFFFFu));
  }
}

}  // namespace

void QuantizedActivations::Quantize(const float* x, int rows, int k, int block) {
  rows_ = rows;
  k_ = k;
  block_ = block;
  const size_t n = static_cast<size_t>(rows) * k;
  if (codes_.size() < n) codes_.resize(n);
  if (scales_.size() < n / block) scales_.resize(n / block);
  if (sums16_.size() < n / 16) sums16_.resize(n / 16);
  if (pair_sums_.size() < n / 64) pair_sums_.resize(n / 64);
    // Rows are independent; split them when there is enough work to pay for the fork.
#pragma omp parallel for schedule(static) if (static_cast <int64_t>(rows) * k >= (1 << 16))
  for (int r = 0; r < rows; ++r) {
    QuantizeRow(x + static_cast<int64_t>(r) * k, k, block,
                codes_.data() + static_cast<int64_t>(r) * k,
                scales_.data() + static_cast<int64_t>(r) * (k / block),
                sums16_.data() + static_cast<int64_t>(r) * (k / 16),
                pair_sums_.data() + static_cast<int64_t>(r) * (k / 64));
  }
}

}  // namespace textgen::model::ops
