#pragma once

// Private to the quantized matmul (quant_matmul.cc schedules passes over threads,
// quant_kernels.cc holds the AVX-512 VNNI kernels): what a pass is and the kernel table of
// each tensor type.

// GCC 12's AVX-512 headers start some results from _mm*_undefined_*(), which
// -Wmaybe-uninitialized flags once inlined: a known false positive (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <array>
#include <cstdint>

#include "model/kernels/quant/quant_layouts.h"
#include "model/kernels/quant/quant_matmul.h"

namespace textgen::model::ops::quant_kernel {

using quant_layout::kQuadBytes;
using quant_layout::Layout;

// The kernels carry their ISA as a function attribute (the project builds without -march);
// they run only after CpuSupportsQuantMatmul said yes.
#define TEXTGEN_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

// Rows sharing one pass over the weights: each loaded weight register serves all of them
// (6 measured 5-30% faster than 4; the f32 accumulators, touched once per block, may spill).
constexpr int kMaxRowBlock = 6;

// Panels sharing one pass: each broadcast activation quad feeds the VPDPBUSD of both, which
// halves the broadcasts per multiply-add. With one panel the loop issued three instructions
// per VPDPBUSD and prefill reached about half the VNNI peak.
constexpr int kMaxPanelBlock = 2;

// The rows of one pass: MR rows from row0 of the activations.
struct Rows {
  const QuantizedActivations* x;
  int row0;
  const int8_t* codes(int r) const { return x->codes(row0 + r); }
  const float* scales(int r) const { return x->scales(row0 + r); }
  const int32_t* sums16(int r) const { return x->sums16(row0 + r); }
  const int32_t* pair_sums(int r) const { return x->pair_sums(row0 + r); }
};

TEXTGEN_VNNI inline __m512i Load(const uint8_t* p) { return _mm512_loadu_si512(p); }

// Weight codes unpacked to one byte each, for a pass over several row blocks: a prefill's
// hundreds of rows then reuse codes unpacked once per pass instead of once per row block. The quad
// of k..k+3 of panel p lies at data + p * panel_bytes + 16 k (Q8_0's layout).
struct UnpackedCodes {
  uint8_t* data = nullptr;
  int64_t panel_bytes = 0;

  TEXTGEN_VNNI void Octet(int p, int k, __m512i& low, __m512i& high) const {
    const uint8_t* quad = data + p * panel_bytes + int64_t{16} * k;
    low = Load(quad);
    high = Load(quad + kQuadBytes);
  }
  TEXTGEN_VNNI void Store(int p, int k, __m512i low, __m512i high) const {
    uint8_t* quad = data + p * panel_bytes + int64_t{16} * k;
    _mm512_storeu_si512(quad, low);
    _mm512_storeu_si512(quad + kQuadBytes, high);
  }
};

// Unpacks the codes of panel `p` into panel `slot` of `u`: 32-element blocks or K-quant

// One pass: NP (1..kMaxPanelBlock) panels from panel `p0` times MR (1..kMaxRowBlock) rows,
// reading codes from the packed blocks or (Unpacked) from `u`. `prefetch` requests the weight
// stream ahead: the first row block of a pass does; later ones find the weights in cache, and
// the requests had cost them about 5% of a prefill's kernel time.
using PassFn = void (*)(const PackedQuantMatrix&, const Layout&, int, Rows, const UnpackedCodes&,
                        float*, int, int, bool);
using UnpackFn = void (*)(const PackedQuantMatrix&, const Layout&, int, int, const UnpackedCodes&);
using RowTable = std::array<PassFn, kMaxRowBlock>;

struct Kernels {
  std::array<RowTable, kMaxPanelBlock> packed;
  std::array<RowTable, kMaxPanelBlock> unpacked;
  // Null where reading the packed codes is as fast: bytes already (Q8_0), or 4-bit codes, whose
  // unpacking costs less than reading twice the bytes from L2 (measured: Q4_K and Q4_0 at 64
  // rows 10% slower unpacked, at 512 the same). Five- and six-bit codes gain 25-65%.
  UnpackFn unpack = nullptr;
};

// Kernel<Unpacked, NP, MR>::Run for every panel and row count.

// The kernel tables are built at compile time: a call only picks one.
const Kernels& KernelsOf(DType dtype);

}  // namespace textgen::model::ops::quant_kernel
