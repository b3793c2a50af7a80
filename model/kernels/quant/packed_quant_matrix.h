#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "model/format/weights.h"
#include "model/kernels/huge_page_arena.h"

namespace textgen::model::ops {

// A quantized weight matrix W [n, k] (nn.Linear layout: a row per output) kept quantized and
// repacked once at load for the VNNI kernels of quant_matmul.h. No f32 copy ever exists.
//
// Layout. Output columns are grouped in panels of 16 (the lanes of one zmm of int32 sums); a
// panel holds its 16 rows of W block after block (a block is 32 elements for Q4_0..Q8_0, a
// 256-element super-block for the K-quants), so a thread streams one contiguous run of
// memory. Inside a block, the integer codes come first, then the scales, then the f16 block
// scales:
//   codes    unsigned, 16 columns x 4 k per 64 bytes (a "quad" of k per column: the operand
//            shape of VPDPBUSD). 4-bit codes share a byte: a 64-byte "octet" holds k 8o..8o+3
//            in its low nibbles and 8o+4..8o+7 in its high nibbles. The fifth bit (Q5_*) and the
//            two high bits (Q6_K) sit in a plane of their own, 64 bytes per 32 (16) k, bit t
//            (bits 2t..2t+1) of byte b belonging to quad t.
//   Q8_0     codes are the int8 weights + 128, so they fit VPDPBUSD's unsigned operand.
//   scales   K-quants: the sub-block scales (and Q4_K/Q5_K minimums) as bytes, [sub][16 cols];
//            the minimums as [pair][16 cols][2] so VPDPWSSD takes two sub-blocks at once.
// Bytes per block and panel equal the file's bytes for 16 rows, except Q4_K/Q5_K (+64 bytes:
// six-bit scales stored as bytes, +2.8%). Columns past n are zero (scale 0): they add nothing.
//
// Each weight is (scale * code + offset) exactly as ggml defines it: Q*_0 offset -d * {8, 16,
// 128}, Q*_1 offset m, K-quants d * sc * q - dmin * min, Q6_K d * sc * (q - 32).
struct PackedQuantMatrix {
  DType dtype = DType::kQ8_0;
  int n = 0, k = 0;
  int panels = 0;                 // ceil(n / 16)
  int blocks = 0;                 // blocks per row: k / block_elements
  int block_elements = 0;         // 32 or 256
  int64_t block_bytes = 0;        // bytes of one block of one panel
  const uint8_t* data = nullptr;  // panels * blocks * block_bytes, 64-byte aligned

  const uint8_t* Block(int panel, int block) const {
    return data + (static_cast<int64_t>(panel) * blocks + block) * block_bytes;
  }
  int64_t bytes() const { return static_cast<int64_t>(panels) * blocks * block_bytes; }
};

inline constexpr int kQuantPanelColumns = 16;

// Whether `dtype` has a packed layout and kernels (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
// Q6_K).
bool IsPackableQuantType(DType dtype);

// Bytes of one block of one panel of `dtype` (packable types only).
int64_t PackedBlockBytes(DType dtype);

// Repacks `weight` (a quantized [n, k] tensor of a packable type, n = weight.rows) into memory
// from `arena`. Panels are packed in parallel on the OpenMP pool. INVALID_ARGUMENT for other
// types or a k that is not a whole number of blocks; RESOURCE_EXHAUSTED if the arena cannot
// grow.
absl::StatusOr<PackedQuantMatrix> PackQuantMatrix(const TensorView& weight, HugePageArena& arena);

// Element (row, col) of W as f32, read back from the packed layout: the exact value the file
// defines (same operations and order as ggml's dequantizers). For tests.
float PackedWeightAt(const PackedQuantMatrix& w, int row, int col);

}  // namespace textgen::model::ops
