#pragma once

#include <cstdint>

namespace textgen::model::ops {

// A weight-streaming matmul for the few-row products of decoding: y[m, N] = x[m, K] W^T (+ b).
//
// Why it exists: at M of 1 to a few rows a matmul is bound by reading the weights from DRAM,
// and oneDNN 2.6.3's fixed-M brgemm reads them at about 27 GB/s on this CPU where the DRAM
// gives 40+. This kernel reads oneDNN's own packed weights (no second copy) in long
// sequential runs and keeps the FMA chains independent so the loads never wait.
//
// Why it can replace oneDNN row for row: it sums exactly as brgemm does. brgemm computes
// every output with one FMA chain per K chunk (k ascending), then adds the chunk sums in
// order and the bias last. Doing the same here gives bitwise the same rows, so a batch may
// mix this kernel (small M) and oneDNN (large M) and every row still comes out identical
// whatever the batch: the engine's batch invariance. `Linear` checks the match against
// oneDNN on every layer at load and keeps oneDNN alone if it ever differs.

// oneDNN's packed layout for AVX-512 brgemm weights (`format_tag::any`, [K, N] logical):
//   f32  BA16a64b:   64-column panels; inside a panel, k-major rows of 64 floats.
//   bf16 BA16a64b2a: 64-column panels; inside, k pairs: [K/2][64 columns][2].
// K is zero-padded to a multiple of 16 (f32) or 32 (bf16), N to a multiple of 64.
struct SkinnyWeights {
  const void* data = nullptr;  // f32 or bf16 (uint16_t) elements
  bool bf16 = false;
  int n = 0, k = 0;
  int64_t panel_stride = 0;  // elements from one 64-column panel to the next
  int k_chunk = 0;           // K is summed in chunks of this many (oneDNN's K block)
};

inline constexpr int kSkinnyPanelColumns = 64;

// Whether this CPU can run the kernel (AVX-512F, plus AVX512-BF16 for bf16 weights).
bool CpuSupportsSkinnyMatmul(bool bf16);

// y[r, :] = x[r, :] W^T + bias for r in [0, m). x is dense row-major [m, K] f32 (or bf16
// as uint16_t when `w.bf16`); y is dense [m, N]; bias is [N] or null. Parallel over the
// OpenMP pool (column panels split between threads); any m >= 1 works, but past a few
// rows oneDNN's cache-blocked kernel is faster.
void SkinnyMatmul(const SkinnyWeights& w, const void* x, int m, const float* bias, float* y);

}  // namespace textgen::model::ops
