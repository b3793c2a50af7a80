#include "model/kernels/quant/quant_matmul.h"

// GCC 12's AVX-512 headers start some results from _mm*_undefined_*(), which
// -Wmaybe-uninitialized flags once inlined: a known false positive (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <array>
#include <cstring>

#include "model/kernels/cpu_features.h"
#include "model/kernels/quant/quant_layouts.h"

namespace textgen::model::ops {
namespace {

using quant_layout::kQuadBytes;
using quant_layout::Layout;

// The kernels carry their ISA as a function attribute (the project builds without -march);
// they run only after CpuSupportsQuantMatmul said yes.
#define TEXTGEN_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

// Rows sharing one pass over a panel's weights: their accumulators and the unpacked codes of
// one block stay in the 32 zmm registers.
constexpr int kMaxRowBlock = 4;

struct Rows {
  const QuantizedActivations* x;
  int row0;
  const int8_t* codes(int r) const { return x->codes(row0 + r); }
  const float* scales(int r) const { return x->scales(row0 + r); }
  const int32_t* sums16(int r) const { return x->sums16(row0 + r); }
  const int32_t* pair_sums(int r) const { return x->pair_sums(row0 + r); }
};

TEXTGEN_VNNI inline __m512i Load(const uint8_t* p) { return _mm512_loadu_si512(p); }

// How far ahead of the loads the weight stream is requested: about DRAM latency times the
// rate one core consumes weights. Without it, decode-shaped calls read DRAM at ~30 GB/s on 2
// cores; 2-6 KiB ahead all measured 45-67 GB/s (noisy neighbours), 1 KiB and 12 KiB less.
constexpr int kPrefetchBytes = 4096;

// Asks for slice `i` of `slices` of the `bytes` at `block` + kPrefetchBytes: a loop over a
// block's parts requests the whole stream ahead of it, evenly, wherever the parts lie.
TEXTGEN_VNNI inline void PrefetchSlice(const uint8_t* block, int bytes, int i, int slices) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(block) + kPrefetchBytes;
  const uintptr_t from = (begin + static_cast<uintptr_t>(bytes) * i / slices) & ~uintptr_t{63};
  const uintptr_t to = begin + static_cast<uintptr_t>(bytes) * (i + 1) / slices;
  for (uintptr_t line = from; line < to; line += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
  }
}

// Four activation codes broadcast to every lane: the signed operand of VPDPBUSD.
TEXTGEN_VNNI inline __m512i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// Sixteen f16 values (one per panel column) as f32.
TEXTGEN_VNNI inline __m512 Halves(const uint8_t* p) {
  // (maskz form: GCC 12's unmasked one trips -Wmaybe-uninitialized in its headers)
  return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

TEXTGEN_VNNI inline __m512i LowNibbles(__m512i v) {
  return _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
}
TEXTGEN_VNNI inline __m512i HighNibbles(__m512i v) {
  return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F));
}

// Bit t of each byte of a fifth-bit plane, moved to bit 4 (shifts stay inside each byte
// after the mask).
template <int T>
TEXTGEN_VNNI inline __m512i FifthBit(__m512i plane) {
  const __m512i moved = T <= 4 ? _mm512_slli_epi16(plane, 4 - T) : _mm512_srli_epi16(plane, T - 4);
  return _mm512_and_si512(moved, _mm512_set1_epi8(0x10));
}

// Bits 2t..2t+1 of each byte of a Q6_K high-bits plane, moved to bits 4-5.
template <int T>
TEXTGEN_VNNI inline __m512i HighPair(__m512i plane) {
  const __m512i moved =
      T <= 2 ? _mm512_slli_epi16(plane, 4 - 2 * T) : _mm512_srli_epi16(plane, 2 * T - 4);
  return _mm512_and_si512(moved, _mm512_set1_epi8(0x30));
}

// The codes of the 8 quads of 32 consecutive k whose nibbles start at `codes` (4 octets),
// with the fifth bits from `plane` when there is one.
template <int Bits>
TEXTGEN_VNNI inline void Codes32(const uint8_t* codes, const uint8_t* plane, __m512i (&q)[8]) {
  if constexpr (Bits == 8) {
#pragma GCC unroll 8
    for (int t = 0; t < 8; ++t) q[t] = Load(codes + t * kQuadBytes);
  } else {
#pragma GCC unroll 4
    for (int o = 0; o < 4; ++o) {
      const __m512i v = Load(codes + o * kQuadBytes);
      q[2 * o] = LowNibbles(v);
      q[2 * o + 1] = HighNibbles(v);
    }
    if constexpr (Bits == 5) {
      const __m512i h = Load(plane);
      q[0] = _mm512_or_si512(q[0], FifthBit<0>(h));
      q[1] = _mm512_or_si512(q[1], FifthBit<1>(h));
      q[2] = _mm512_or_si512(q[2], FifthBit<2>(h));
      q[3] = _mm512_or_si512(q[3], FifthBit<3>(h));
      q[4] = _mm512_or_si512(q[4], FifthBit<4>(h));
      q[5] = _mm512_or_si512(q[5], FifthBit<5>(h));
      q[6] = _mm512_or_si512(q[6], FifthBit<6>(h));
      q[7] = _mm512_or_si512(q[7], FifthBit<7>(h));
    }
  }
}

// sum over 32 k of q * xq for one row, starting from `init`: two chains so decode (one row)
// does not wait on VPDPBUSD's latency.
TEXTGEN_VNNI inline __m512i Dot32(const __m512i (&q)[8], const int8_t* xq, __m512i init) {
  __m512i a = init, b = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int t = 0; t < 8; t += 2) {
    a = _mm512_dpbusd_epi32(a, q[t], Broadcast4(xq + 4 * t));
    b = _mm512_dpbusd_epi32(b, q[t + 1], Broadcast4(xq + 4 * t + 4));
  }
  return _mm512_add_epi32(a, b);
}

TEXTGEN_VNNI inline void ZeroRows(__m512 (&v)[kMaxRowBlock]) {
  for (__m512& x : v) x = _mm512_setzero_ps();
}
TEXTGEN_VNNI inline void ZeroRows(__m512i (&v)[kMaxRowBlock]) {
  for (__m512i& x : v) x = _mm512_setzero_si512();
}

// acc[r] += (d * dx_r) * sums[r] for the MR rows: a super-block's integer sum into the f32
// accumulators, dx_r being row r's activation scale for super-block `sb`.
template <int MR>
TEXTGEN_VNNI inline void AddScaledSums(const __m512i (&sums)[kMaxRowBlock], __m512 d, Rows x,
                                       int sb, __m512 (&acc)[kMaxRowBlock]) {
  for (int r = 0; r < MR; ++r) {
    const __m512 dx = _mm512_set1_ps(x.scales(r)[sb]);
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[r]), _mm512_mul_ps(d, dx), acc[r]);
  }
}

TEXTGEN_VNNI inline void Store(const __m512 (&acc)[kMaxRowBlock], int mr, float* y, int ldy,
                               int cols) {
  const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1u);
  for (int r = 0; r < mr; ++r)
    _mm512_mask_storeu_ps(y + static_cast<int64_t>(r) * ldy, mask, acc[r]);
}

// ---- Q8_0, Q4_0, Q4_1, Q5_0, Q5_1: 32-element blocks ----

template <int Bits, int Offset, bool HasMin, int MR>
TEXTGEN_VNNI void Block32Panel(const PackedQuantMatrix& w, const Layout& l, int p, Rows x, float* y,
                               int ldy, int cols) {
  __m512 acc[kMaxRowBlock];
  ZeroRows(acc);
  const uint8_t* block = w.Block(p, 0);
  for (int b = 0; b < w.blocks; ++b, block += l.bytes) {
    PrefetchSlice(block, l.bytes, 0, 1);
    __m512i q[8];
    Codes32<Bits>(block, block + l.plane, q);
    const __m512 d = Halves(block + l.d);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const int32_t* s = x.sums16(r) + 2 * b;
      const int32_t xsum = s[0] + s[1];
      const __m512i isum = Dot32(q, x.codes(r) + 32 * b, _mm512_set1_epi32(-Offset * xsum));
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), d);
      if constexpr (HasMin) {
        v = _mm512_fmadd_ps(Halves(block + l.m), _mm512_set1_ps(static_cast<float>(xsum)), v);
      }
      acc[r] = _mm512_fmadd_ps(v, _mm512_set1_ps(x.scales(r)[b]), acc[r]);
    }
  }
  Store(acc, MR, y, ldy, cols);
}

// ---- Q4_K, Q5_K: 256-element super-blocks of 8 sub-blocks with scales and minimums ----

template <int Bits, int MR>
TEXTGEN_VNNI void K32Panel(const PackedQuantMatrix& w, const Layout& l, int p, Rows x, float* y,
                           int ldy, int cols) {
  __m512 acc[kMaxRowBlock];
  ZeroRows(acc);
  const uint8_t* block = w.Block(p, 0);
  for (int sb = 0; sb < w.blocks; ++sb, block += l.bytes) {
    __m512i scaled[kMaxRowBlock];
    ZeroRows(scaled);
    for (int j = 0; j < 8; ++j) {
      PrefetchSlice(block, l.bytes, j, 8);
      __m512i q[8];
      Codes32<Bits>(block + 4 * j * kQuadBytes, block + l.plane + j * kQuadBytes, q);
      const __m512i sc = _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + l.scales + 16 * j)));
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const __m512i isum = Dot32(q, x.codes(r) + 256 * sb + 32 * j, _mm512_setzero_si512());
        scaled[r] = _mm512_add_epi32(scaled[r], _mm512_mullo_epi32(isum, sc));
      }
    }
    __m512i mins[kMaxRowBlock];
    ZeroRows(mins);
#pragma GCC unroll 4
    for (int pair = 0; pair < 4; ++pair) {
      const __m512i m = _mm512_cvtepu8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + l.mins + 32 * pair)));
      for (int r = 0; r < MR; ++r) {
        mins[r] = _mm512_dpwssd_epi32(mins[r], m, _mm512_set1_epi32(x.pair_sums(r)[4 * sb + pair]));
      }
    }
    AddScaledSums<MR>(scaled, Halves(block + l.d), x, sb, acc);
    // Minus dmin (negating is exact: the same as subtracting the product).
    const __m512 minus_dmin = _mm512_sub_ps(_mm512_setzero_ps(), Halves(block + l.m));
    AddScaledSums<MR>(mins, minus_dmin, x, sb, acc);
  }
  Store(acc, MR, y, ldy, cols);
}

// ---- Q6_K: 256-element super-blocks of 16 sub-blocks with signed scales, codes - 32 ----

template <int MR>
TEXTGEN_VNNI void Q6KPanel(const PackedQuantMatrix& w, const Layout& l, int p, Rows x, float* y,
                           int ldy, int cols) {
  __m512 acc[kMaxRowBlock];
  ZeroRows(acc);
  const uint8_t* block = w.Block(p, 0);
  for (int sb = 0; sb < w.blocks; ++sb, block += l.bytes) {
    __m512i scaled[kMaxRowBlock];
    ZeroRows(scaled);
    for (int j = 0; j < 16; ++j) {
      PrefetchSlice(block, l.bytes, j, 16);
      const __m512i h = Load(block + l.plane + j * kQuadBytes);
      const __m512i v0 = Load(block + 2 * j * kQuadBytes);
      const __m512i v1 = Load(block + (2 * j + 1) * kQuadBytes);
      const __m512i q0 = _mm512_or_si512(LowNibbles(v0), HighPair<0>(h));
      const __m512i q1 = _mm512_or_si512(HighNibbles(v0), HighPair<1>(h));
      const __m512i q2 = _mm512_or_si512(LowNibbles(v1), HighPair<2>(h));
      const __m512i q3 = _mm512_or_si512(HighNibbles(v1), HighPair<3>(h));
      const __m512i sc = _mm512_cvtepi8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + l.scales + 16 * j)));
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const int8_t* xq = x.codes(r) + 256 * sb + 16 * j;
        __m512i a = _mm512_set1_epi32(-32 * x.sums16(r)[16 * sb + j]);
        __m512i b = _mm512_setzero_si512();
        a = _mm512_dpbusd_epi32(a, q0, Broadcast4(xq));
        b = _mm512_dpbusd_epi32(b, q1, Broadcast4(xq + 4));
        a = _mm512_dpbusd_epi32(a, q2, Broadcast4(xq + 8));
        b = _mm512_dpbusd_epi32(b, q3, Broadcast4(xq + 12));
        scaled[r] = _mm512_add_epi32(scaled[r], _mm512_mullo_epi32(_mm512_add_epi32(a, b), sc));
      }
    }
    AddScaledSums<MR>(scaled, Halves(block + l.d), x, sb, acc);
  }
  Store(acc, MR, y, ldy, cols);
}

using PanelFn = void (*)(const PackedQuantMatrix&, const Layout&, int, Rows, float*, int, int);

// The panel kernels of `dtype` for 1..kMaxRowBlock rows.
template <template <int> class Kernel>
constexpr std::array<PanelFn, kMaxRowBlock> RowKernels() {
  return {Kernel<1>::Run, Kernel<2>::Run, Kernel<3>::Run, Kernel<4>::Run};
}

template <int Bits, int Offset, bool HasMin>
struct Block32 {
  template <int MR>
  struct K {
    TEXTGEN_VNNI static void Run(const PackedQuantMatrix& w, const Layout& l, int p, Rows x,
                                 float* y, int ldy, int cols) {
      Block32Panel<Bits, Offset, HasMin, MR>(w, l, p, x, y, ldy, cols);
    }
  };
};

template <int Bits>
struct KQuant32 {
  template <int MR>
  struct K {
    TEXTGEN_VNNI static void Run(const PackedQuantMatrix& w, const Layout& l, int p, Rows x,
                                 float* y, int ldy, int cols) {
      K32Panel<Bits, MR>(w, l, p, x, y, ldy, cols);
    }
  };
};

template <int MR>
struct Q6K {
  TEXTGEN_VNNI static void Run(const PackedQuantMatrix& w, const Layout& l, int p, Rows x, float* y,
                               int ldy, int cols) {
    Q6KPanel<MR>(w, l, p, x, y, ldy, cols);
  }
};

std::array<PanelFn, kMaxRowBlock> KernelsOf(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
      return RowKernels<Block32<8, 128, false>::K>();
    case DType::kQ4_0:
      return RowKernels<Block32<4, 8, false>::K>();
    case DType::kQ4_1:
      return RowKernels<Block32<4, 0, true>::K>();
    case DType::kQ5_0:
      return RowKernels<Block32<5, 16, false>::K>();
    case DType::kQ5_1:
      return RowKernels<Block32<5, 0, true>::K>();
    case DType::kQ4_K:
      return RowKernels<KQuant32<4>::K>();
    case DType::kQ5_K:
      return RowKernels<KQuant32<5>::K>();
    default:
      return RowKernels<Q6K>();
  }
}

}  // namespace

bool CpuSupportsQuantMatmul() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = CpuHasAvx512() && __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

int ActivationBlockFor(DType dtype) { return quant_layout::LayoutOf(dtype)->block_elements; }

void QuantMatmul(const PackedQuantMatrix& w, const QuantizedActivations& x, float* y, int ldy) {
  const Layout& layout = *quant_layout::LayoutOf(w.dtype);
  const std::array<PanelFn, kMaxRowBlock> kernels = KernelsOf(w.dtype);
  const int m = x.rows();
  // Static split: each thread streams one contiguous run of panels; inside a panel, rows go
  // kMaxRowBlock at a time while its weights are hot in cache.
#pragma omp parallel for schedule(static)
  for (int p = 0; p < w.panels; ++p) {
    const int col0 = p * kQuantPanelColumns;
    const int cols = std::min(kQuantPanelColumns, w.n - col0);
    for (int r0 = 0; r0 < m; r0 += kMaxRowBlock) {
      const int mr = std::min(kMaxRowBlock, m - r0);
      kernels[mr - 1](w, layout, p, Rows{&x, r0}, y + static_cast<int64_t>(r0) * ldy + col0, ldy,
                      cols);
    }
  }
}

}  // namespace textgen::model::ops
