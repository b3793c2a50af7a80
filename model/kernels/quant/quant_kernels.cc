#include "model/kernels/quant/quant_kernels.h"

#include <algorithm>
#include <utility>

namespace textgen::model::ops::quant_kernel {
namespace {

// Per-(panel, row) registers of one pass.
using IntTile = __m512i[kMaxPanelBlock][kMaxRowBlock];
using FloatTile = __m512[kMaxPanelBlock][kMaxRowBlock];

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

// A Q6_K code: the 4 low bits of `nibbles` (already shifted down for a high nibble), with bits
// 2t..2t+1 of each byte of the high-bits plane as bits 4-5. One ternary-logic op merges:
// (nibbles & 0x0F) | (moved & 0x30) is "mask ? nibbles : moved" restricted to bits 0-5.
template <int T>
TEXTGEN_VNNI inline __m512i SixBitCode(__m512i nibbles, __m512i plane) {
  const __m512i moved =
      T <= 2 ? _mm512_slli_epi16(plane, 4 - 2 * T) : _mm512_srli_epi16(plane, 2 * T - 4);
  const __m512i merged = _mm512_ternarylogic_epi32(_mm512_set1_epi8(0x0F), nibbles, moved, 0xCA);
  return _mm512_and_si512(merged, _mm512_set1_epi8(0x3F));
}

// The codes of quads 2o and 2o+1 (k 8o..8o+3 and 8o+4..8o+7) of the 32-k group whose codes
// start at `group`. For 5-bit codes, `plane` holds the group's fifth-bit plane shifted right
// by 2o bits (bits 0 and 1 of each byte are the quads' fifth bits); it is shifted on for the
// next octet. Shifts are 16-bit, but the bits taken never cross a byte.
template <int Bits>
TEXTGEN_VNNI inline void OctetCodes(const uint8_t* group, int o, __m512i& plane, __m512i& low,
                                    __m512i& high) {
  if constexpr (Bits == 8) {
    low = Load(group + 2 * o * kQuadBytes);
    high = Load(group + (2 * o + 1) * kQuadBytes);
  } else {
    const __m512i v = Load(group + o * kQuadBytes);
    low = LowNibbles(v);
    high = HighNibbles(v);
    if constexpr (Bits == 5) {
      const __m512i bit4 = _mm512_set1_epi8(0x10);
      low = _mm512_or_si512(low, _mm512_and_si512(_mm512_slli_epi16(plane, 4), bit4));
      high = _mm512_or_si512(high, _mm512_and_si512(_mm512_slli_epi16(plane, 3), bit4));
      plane = _mm512_srli_epi16(plane, 2);
    }
  }
}

// sum[p][r] += quad q[p] of every panel times the 4 activation codes of row r at `k`. One row
// alone (decode) runs two chains, even quads in sum[p][0] and odd in sum[p][1], so it does not
// wait on VPDPBUSD's latency; FoldChains adds them (integer sums: exact in any order).
template <int NP, int MR>
TEXTGEN_VNNI inline void DotQuad(const __m512i (&q)[kMaxPanelBlock], Rows x, int k, int parity,
                                 IntTile& sum) {
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const __m512i b = Broadcast4(x.codes(r) + k);
    const int chain = MR == 1 ? parity : r;
#pragma GCC unroll 2
    for (int p = 0; p < NP; ++p) sum[p][chain] = _mm512_dpbusd_epi32(sum[p][chain], q[p], b);
  }
}

template <int NP, int MR>
TEXTGEN_VNNI inline void FoldChains(IntTile& sum) {
  if constexpr (MR == 1) {
    for (int p = 0; p < NP; ++p) sum[p][0] = _mm512_add_epi32(sum[p][0], sum[p][1]);
  }
}

// Every row's chain starts at `init(r)`, the rest at zero.
template <int NP, int MR, typename Init>
TEXTGEN_VNNI inline void StartChains(IntTile& sum, Init init) {
  for (int r = 0; r < MR; ++r) {
    const __m512i v = init(r);
    for (int p = 0; p < NP; ++p) sum[p][r] = v;
  }
  if constexpr (MR == 1) {
    for (int p = 0; p < NP; ++p) sum[p][1] = _mm512_setzero_si512();
  }
}

TEXTGEN_VNNI inline void ZeroAll(IntTile& v) {
  for (auto& panel : v)
    for (__m512i& x : panel) x = _mm512_setzero_si512();
}
TEXTGEN_VNNI inline void ZeroAll(FloatTile& v) {
  for (auto& panel : v)
    for (__m512& x : panel) x = _mm512_setzero_ps();
}

// scaled[p][r] += sc_p * sum[p][r]: one sub-block's sums times its 16 byte scales (one per
// column) at `scales` in panel p's block (`stride` bytes further per panel), unsigned (Q4_K,
// Q5_K) or signed (Q6_K). Integer: exact.
template <int NP, int MR, bool Signed>
TEXTGEN_VNNI inline void AddSubBlockSums(const IntTile& sum, const uint8_t* scales, int64_t stride,
                                         IntTile& scaled) {
  for (int p = 0; p < NP; ++p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + p * stride));
    const __m512i sc = Signed ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
    for (int r = 0; r < MR; ++r) {
      scaled[p][r] = _mm512_add_epi32(scaled[p][r], _mm512_mullo_epi32(sum[p][r], sc));
    }
  }
}

// acc[p][r] += (d_p * dx_r) * sums[p][r] for the MR rows: a super-block's integer sums into the
// f32 accumulators, d_p the panel's scales at `scale_offset` of its block, dx_r row r's
// activation scale for super-block `sb`.
template <int NP, int MR>
TEXTGEN_VNNI inline void AddScaledSums(const IntTile& sums, const uint8_t* block, int64_t stride,
                                       int scale_offset, bool negate, Rows x, int sb,
                                       FloatTile& acc) {
  for (int p = 0; p < NP; ++p) {
    __m512 d = Halves(block + p * stride + scale_offset);
    // Negating is exact: the same as subtracting the product.
    if (negate) d = _mm512_sub_ps(_mm512_setzero_ps(), d);
    for (int r = 0; r < MR; ++r) {
      const __m512 dx = _mm512_set1_ps(x.scales(r)[sb]);
      acc[p][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[p][r]), _mm512_mul_ps(d, dx), acc[p][r]);
    }
  }
}

// The MR rows of NP panels into y; the last panel has `cols` columns.
template <int NP, int MR>
TEXTGEN_VNNI inline void Store(const FloatTile& acc, float* y, int ldy, int cols) {
  for (int p = 0; p < NP; ++p) {
    const int width = p == NP - 1 ? cols : kQuantPanelColumns;
    const __mmask16 mask = static_cast<__mmask16>((1u << width) - 1u);
    for (int r = 0; r < MR; ++r) {
      _mm512_mask_storeu_ps(y + static_cast<int64_t>(r) * ldy + p * kQuantPanelColumns, mask,
                            acc[p][r]);
    }
  }
}

template <int Bits, int GroupsPerBlock>
TEXTGEN_VNNI void UnpackGroups(const PackedQuantMatrix& w, const Layout& l, int p, int slot,
                               const UnpackedCodes& u) {
  const uint8_t* block = w.Block(p, 0);
  for (int b = 0; b < w.blocks; ++b, block += l.bytes) {
    for (int g = 0; g < GroupsPerBlock; ++g) {
      const uint8_t* group = block + (Bits == 8 ? 8 : 4) * g * kQuadBytes;
      __m512i plane = Bits == 5 ? Load(block + l.plane + g * kQuadBytes) : _mm512_setzero_si512();
      for (int o = 0; o < 4; ++o) {
        __m512i low, high;
        OctetCodes<Bits>(group, o, plane, low, high);
        u.Store(slot, 32 * (GroupsPerBlock * b + g) + 8 * o, low, high);
      }
    }
  }
}

TEXTGEN_VNNI void UnpackSixBit(const PackedQuantMatrix& w, const Layout& l, int p, int slot,
                               const UnpackedCodes& u);

// 16 e8m0 exponent bytes as f32 2^(e - 128) (MXFP4's halved scales; exact, subnormals too).
TEXTGEN_VNNI inline __m512 E8m0Halves(const uint8_t* p) {
  const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm512_scalef_ps(_mm512_set1_ps(1.0f),
                          _mm512_cvtepi32_ps(_mm512_sub_epi32(e, _mm512_set1_epi32(128))));
}

// MXFP4's e2m1 nibble -> its doubled value + 12 (0..24, unsigned for VPDPBUSD; the kernel
// subtracts 12 times the activations' sum), in every 128-bit lane for VPSHUFB.
TEXTGEN_VNNI inline __m512i E2m1Table() {
  return _mm512_broadcast_i32x4(
      _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
}

// ---- Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4: 32-element blocks ----

template <int Bits, int Offset, bool HasMin, bool E2m1, bool Unpacked, int NP, int MR>
TEXTGEN_VNNI void Block32Panels(const PackedQuantMatrix& w, const Layout& l, int p0, Rows x,
                                const UnpackedCodes& u, float* y, int ldy, int cols,
                                bool prefetch) {
  const int64_t stride = int64_t{w.blocks} * w.block_bytes;
  FloatTile acc;
  ZeroAll(acc);
  const uint8_t* block = w.Block(p0, 0);
  for (int b = 0; b < w.blocks; ++b, block += l.bytes) {
    __m512i plane[kMaxPanelBlock];
    for (int p = 0; p < NP; ++p) {
      if constexpr (!Unpacked) {
        if (prefetch) PrefetchSlice(block + p * stride, l.bytes, 0, 1);
        if constexpr (Bits == 5) plane[p] = Load(block + p * stride + l.plane);
      }
    }
    IntTile sum;
    StartChains<NP, MR>(sum, [&](int r) TEXTGEN_VNNI {
      const int32_t* s = x.sums16(r) + 2 * b;
      return _mm512_set1_epi32(-Offset * (s[0] + s[1]));
    });
#pragma GCC unroll 4
    for (int o = 0; o < 4; ++o) {
      __m512i low[kMaxPanelBlock], high[kMaxPanelBlock];
      for (int p = 0; p < NP; ++p) {
        if constexpr (Unpacked) {
          u.Octet(p, 32 * b + 8 * o, low[p], high[p]);
        } else {
          OctetCodes<Bits>(block + p * stride, o, plane[p], low[p], high[p]);
        }
        if constexpr (E2m1) {
          low[p] = _mm512_shuffle_epi8(E2m1Table(), low[p]);
          high[p] = _mm512_shuffle_epi8(E2m1Table(), high[p]);
        }
      }
      DotQuad<NP, MR>(low, x, 32 * b + 8 * o, 0, sum);
      DotQuad<NP, MR>(high, x, 32 * b + 8 * o + 4, 1, sum);
    }
    FoldChains<NP, MR>(sum);
    for (int p = 0; p < NP; ++p) {
      const __m512 d =
          E2m1 ? E8m0Halves(block + p * stride + l.d) : Halves(block + p * stride + l.d);
      for (int r = 0; r < MR; ++r) {
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(sum[p][r]), d);
        if constexpr (HasMin) {
          const int32_t* s = x.sums16(r) + 2 * b;
          v = _mm512_fmadd_ps(Halves(block + p * stride + l.m),
                              _mm512_set1_ps(static_cast<float>(s[0] + s[1])), v);
        }
        acc[p][r] = _mm512_fmadd_ps(v, _mm512_set1_ps(x.scales(r)[b]), acc[p][r]);
      }
    }
  }
  Store<NP, MR>(acc, y, ldy, cols);
}

// ---- Q4_K, Q5_K: 256-element super-blocks of 8 sub-blocks with scales and minimums ----

template <int Bits, bool Unpacked, int NP, int MR>
TEXTGEN_VNNI void K32Panels(const PackedQuantMatrix& w, const Layout& l, int p0, Rows x,
                            const UnpackedCodes& u, float* y, int ldy, int cols, bool prefetch) {
  const int64_t stride = int64_t{w.blocks} * w.block_bytes;
  FloatTile acc;
  ZeroAll(acc);
  const uint8_t* block = w.Block(p0, 0);
  for (int sb = 0; sb < w.blocks; ++sb, block += l.bytes) {
    IntTile scaled;
    ZeroAll(scaled);
    for (int j = 0; j < 8; ++j) {
      __m512i plane[kMaxPanelBlock];
      for (int p = 0; p < NP; ++p) {
        if constexpr (!Unpacked) {
          if (prefetch) PrefetchSlice(block + p * stride, l.bytes, j, 8);
          if constexpr (Bits == 5) plane[p] = Load(block + p * stride + l.plane + j * kQuadBytes);
        }
      }
      IntTile sum;
      ZeroAll(sum);
#pragma GCC unroll 4
      for (int o = 0; o < 4; ++o) {
        __m512i low[kMaxPanelBlock], high[kMaxPanelBlock];
        for (int p = 0; p < NP; ++p) {
          if constexpr (Unpacked) {
            u.Octet(p, 256 * sb + 32 * j + 8 * o, low[p], high[p]);
          } else {
            OctetCodes<Bits>(block + p * stride + 4 * j * kQuadBytes, o, plane[p], low[p], high[p]);
          }
        }
        DotQuad<NP, MR>(low, x, 256 * sb + 32 * j + 8 * o, 0, sum);
        DotQuad<NP, MR>(high, x, 256 * sb + 32 * j + 8 * o + 4, 1, sum);
      }
      FoldChains<NP, MR>(sum);
      AddSubBlockSums<NP, MR, /*Signed=*/false>(sum, block + l.scales + 16 * j, stride, scaled);
    }
    IntTile mins;
    ZeroAll(mins);
#pragma GCC unroll 4
    for (int pair = 0; pair < 4; ++pair) {
      __m512i m[kMaxPanelBlock];
      for (int p = 0; p < NP; ++p) {
        m[p] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(block + p * stride + l.mins + 32 * pair)));
      }
      for (int r = 0; r < MR; ++r) {
        const __m512i s = _mm512_set1_epi32(x.pair_sums(r)[4 * sb + pair]);
        for (int p = 0; p < NP; ++p) mins[p][r] = _mm512_dpwssd_epi32(mins[p][r], m[p], s);
      }
    }
    AddScaledSums<NP, MR>(scaled, block, stride, l.d, /*negate=*/false, x, sb, acc);
    AddScaledSums<NP, MR>(mins, block, stride, l.m, /*negate=*/true, x, sb, acc);
  }
  Store<NP, MR>(acc, y, ldy, cols);
}

// ---- Q6_K: 256-element super-blocks of 16 sub-blocks with signed scales, codes - 32 ----

// The codes of quads 4j + 2 half and 4j + 2 half + 1 of a packed Q6_K super-block.
TEXTGEN_VNNI inline void SixBitOctet(const uint8_t* block, int j, int half, __m512i& low,
                                     __m512i& high) {
  const __m512i h = Load(block + quant_layout::kQ6_K.plane + j * kQuadBytes);
  const __m512i v = Load(block + (2 * j + half) * kQuadBytes);
  const __m512i shifted = _mm512_srli_epi16(v, 4);
  low = half == 0 ? SixBitCode<0>(v, h) : SixBitCode<2>(v, h);
  high = half == 0 ? SixBitCode<1>(shifted, h) : SixBitCode<3>(shifted, h);
}

template <bool Unpacked, int NP, int MR>
TEXTGEN_VNNI void Q6KPanels(const PackedQuantMatrix& w, const Layout& l, int p0, Rows x,
                            const UnpackedCodes& u, float* y, int ldy, int cols, bool prefetch) {
  const int64_t stride = int64_t{w.blocks} * w.block_bytes;
  FloatTile acc;
  ZeroAll(acc);
  const uint8_t* block = w.Block(p0, 0);
  for (int sb = 0; sb < w.blocks; ++sb, block += l.bytes) {
    IntTile scaled;
    ZeroAll(scaled);
    for (int j = 0; j < 16; ++j) {
      IntTile sum;
      StartChains<NP, MR>(sum, [&](int r) TEXTGEN_VNNI {
        return _mm512_set1_epi32(-32 * x.sums16(r)[16 * sb + j]);
      });
      const int k = 256 * sb + 16 * j;
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        __m512i low[kMaxPanelBlock], high[kMaxPanelBlock];
        for (int p = 0; p < NP; ++p) {
          if constexpr (Unpacked) {
            u.Octet(p, k + 8 * half, low[p], high[p]);
          } else {
            const uint8_t* panel = block + p * stride;
            if (prefetch && half == 0) PrefetchSlice(panel, l.bytes, j, 16);
            SixBitOctet(panel, j, half, low[p], high[p]);
          }
        }
        DotQuad<NP, MR>(low, x, k + 8 * half, 0, sum);
        DotQuad<NP, MR>(high, x, k + 8 * half + 4, 1, sum);
      }
      FoldChains<NP, MR>(sum);
      AddSubBlockSums<NP, MR, /*Signed=*/true>(sum, block + l.scales + 16 * j, stride, scaled);
    }
    AddScaledSums<NP, MR>(scaled, block, stride, l.d, /*negate=*/false, x, sb, acc);
  }
  Store<NP, MR>(acc, y, ldy, cols);
}

TEXTGEN_VNNI void UnpackSixBit(const PackedQuantMatrix& w, const Layout& l, int p, int slot,
                               const UnpackedCodes& u) {
  const uint8_t* block = w.Block(p, 0);
  for (int sb = 0; sb < w.blocks; ++sb, block += l.bytes) {
    for (int j = 0; j < 16; ++j) {
      for (int half = 0; half < 2; ++half) {
        __m512i low, high;
        SixBitOctet(block, j, half, low, high);
        u.Store(slot, 256 * sb + 16 * j + 8 * half, low, high);
      }
    }
  }
}

template <template <bool, int, int> class Kernel, bool Unpacked, int NP, int... MR>
constexpr RowTable RowKernelsOf(std::integer_sequence<int, MR...>) {
  return {Kernel<Unpacked, NP, MR + 1>::Run...};
}
template <template <bool, int, int> class Kernel, bool Unpacked>
constexpr std::array<RowTable, kMaxPanelBlock> PanelKernels() {
  constexpr auto rows = std::make_integer_sequence<int, kMaxRowBlock>{};
  return {RowKernelsOf<Kernel, Unpacked, 1>(rows), RowKernelsOf<Kernel, Unpacked, 2>(rows)};
}
template <template <bool, int, int> class Kernel>
constexpr Kernels KernelsFor(UnpackFn unpack) {
  return {PanelKernels<Kernel, false>(), PanelKernels<Kernel, true>(), unpack};
}

template <int Bits, int Offset, bool HasMin, bool E2m1 = false>
struct Block32 {
  template <bool Unpacked, int NP, int MR>
  struct K {
    TEXTGEN_VNNI static void Run(const PackedQuantMatrix& w, const Layout& l, int p, Rows x,
                                 const UnpackedCodes& u, float* y, int ldy, int cols,
                                 bool prefetch) {
      Block32Panels<Bits, Offset, HasMin, E2m1, Unpacked, NP, MR>(w, l, p, x, u, y, ldy, cols,
                                                                  prefetch);
    }
  };
  static constexpr Kernels kAll = KernelsFor<K>(Bits == 5 ? UnpackGroups<Bits, 1> : nullptr);
};

template <int Bits>
struct KQuant32 {
  template <bool Unpacked, int NP, int MR>
  struct K {
    TEXTGEN_VNNI static void Run(const PackedQuantMatrix& w, const Layout& l, int p, Rows x,
                                 const UnpackedCodes& u, float* y, int ldy, int cols,
                                 bool prefetch) {
      K32Panels<Bits, Unpacked, NP, MR>(w, l, p, x, u, y, ldy, cols, prefetch);
    }
  };
  static constexpr Kernels kAll = KernelsFor<K>(Bits == 5 ? UnpackGroups<Bits, 8> : nullptr);
};

struct Q6K {
  template <bool Unpacked, int NP, int MR>
  struct K {
    TEXTGEN_VNNI static void Run(const PackedQuantMatrix& w, const Layout& l, int p, Rows x,
                                 const UnpackedCodes& u, float* y, int ldy, int cols,
                                 bool prefetch) {
      if constexpr (NP == 2 && !Unpacked) {
        // Unpacking two panels' six-bit codes at once needs more registers than there are.
        Q6KPanels<false, 1, MR>(w, l, p, x, u, y, ldy, kQuantPanelColumns, prefetch);
        Q6KPanels<false, 1, MR>(w, l, p + 1, x, u, y + kQuantPanelColumns, ldy, cols, prefetch);
      } else {
        Q6KPanels<Unpacked, NP, MR>(w, l, p, x, u, y, ldy, cols, prefetch);
      }
    }
  };
  static constexpr Kernels kAll = KernelsFor<K>(UnpackSixBit);
};

}  // namespace

const Kernels& KernelsOf(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
      return Block32<8, 128, false>::kAll;
    case DType::kQ4_0:
      return Block32<4, 8, false>::kAll;
    case DType::kQ4_1:
      return Block32<4, 0, true>::kAll;
    case DType::kQ5_0:
      return Block32<5, 16, false>::kAll;
    case DType::kQ5_1:
      return Block32<5, 0, true>::kAll;
    case DType::kQ4_K:
      return KQuant32<4>::kAll;
    case DType::kQ5_K:
      return KQuant32<5>::kAll;
    case DType::kMXFP4:
      return Block32<4, 12, false, true>::kAll;
    default:
      return Q6K::kAll;
  }
}

}  // namespace textgen::model::ops::quant_kernel
