#pragma once

#include <span>

#include "model/kernels/quant/packed_quant_matrix.h"
#include "model/kernels/quant/quantized_activations.h"

namespace textgen::model::ops {

// y = x W^T for quantized W, with integer dot products (AVX512-VNNI VPDPBUSD: unsigned weight
// codes times int8 activation codes, summed exactly in int32) and f32 scaling per block:
//   Q*_0, Q8_0:  y += (dx * d) * sum((q - offset) * xq)                     (per 32)
//   Q*_1:        y += dx * (d * sum(q * xq) + m * sum(xq))                  (per 32)
//   Q4_K, Q5_K:  y += (dx * d) * sum_sub(sc * sum(q * xq))
//                   - (dx * dmin) * sum_sub(min * sum(xq))                  (per 256)
//   Q6_K:        y += (dx * d) * sum_sub(sc * sum((q - 32) * xq))           (per 256)
// where dx and xq are the activations' scale and codes (QuantizedActivations, 32- or
// 256-element blocks: ActivationBlockFor).
//
// Batch invariance by construction: every output is computed by the same sequence of f32
// operations (blocks in k order, one accumulator) whatever the number of rows, the rows
// computed alongside it, or the thread that runs its panel. Only the integer sums are
// organised differently by batch size, and they are exact: decode (under 8 rows) streams one
// 16-column panel at a time straight from DRAM; more rows take two panels per pass, so each
// broadcast activation feeds both, up to 6 rows at a time sharing each loaded weight
// register; from 18 rows, 5- and 6-bit codes are unpacked to bytes once per pass instead of
// once per 6 rows.

// Whether this CPU runs the kernels (AVX-512 F/BW/VL with VNNI).
bool CpuSupportsQuantMatmul();

// The activation block size `dtype`'s kernel wants: 32 or 256.
int ActivationBlockFor(DType dtype);

// y[r, c] = sum_k W[c, k] x[r, k] for r < x.rows(), c < w.n; rows of y are `ldy` floats apart
// (so several matrices can fill adjacent columns of one output). x.k() must equal w.k and
// x.block() ActivationBlockFor(w.dtype). Parallel over the OpenMP pool: each thread streams a
// contiguous run of 16-column panels, and one done first takes the back half of what another
// has not started (from 64 rows, panel pairs one at a time from a shared counter); a row's
// outputs are bitwise the same with any thread count, any other rows and whichever thread
// computes them.
void QuantMatmul(const PackedQuantMatrix& w, const QuantizedActivations& x, float* y, int ldy);

// One QuantMatmul(*w, *x, y, ldy).
struct QuantMatmulJob {
  const PackedQuantMatrix* w;
  const QuantizedActivations* x;
  float* y;
  int ldy;
};

// Several products in one parallel region (a mixture's experts for a decode step: a fork and a
// join for all of them, the weight streams back to back): the passes of every job are split
// over the threads as one run, and each output is computed exactly as QuantMatmul computes it.
void QuantMatmuls(std::span<const QuantMatmulJob> jobs);

}  // namespace textgen::model::ops
