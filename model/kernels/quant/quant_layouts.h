#pragma once

// Where each part of a packed block lies (packed_quant_matrix.h describes the layout); shared by
// the packer and the kernels. Offsets in bytes from the start of one block of one panel.

#include <cstdint>

#include "model/format/weights.h"

namespace textgen::model::ops::quant_layout {

inline constexpr int kQuadBytes = 64;  // 16 columns x 4 k: one VPDPBUSD operand

struct Layout {
  int block_elements;   // 32 or 256
  int code_bits;        // 4, 5, 6 or 8
  int plane;            // fifth-bit / high-bits plane (-1: none)
  int scales;           // K-quants: sub-block scales [sub][16] (-1: none)
  int mins;             // Q4_K/Q5_K: minimums [pair][16][2] (-1: none)
  int d;                // block scale [16]: f16, or MXFP4's e8m0 exponent bytes
  int m;                // f16 Q*_1 minimum or K-quant dmin [16] (-1: none)
  int bytes;            // whole block
  int scale_bytes = 2;  // of each d: 2 (f16), 1 (e8m0)
};

// The code bytes (nibble or byte planes) always start at offset 0.
inline constexpr Layout kQ8_0{32, 8, -1, -1, -1, 512, -1, 544};
inline constexpr Layout kQ4_0{32, 4, -1, -1, -1, 256, -1, 288};
inline constexpr Layout kQ4_1{32, 4, -1, -1, -1, 256, 288, 320};
inline constexpr Layout kQ5_0{32, 5, 256, -1, -1, 320, -1, 352};
inline constexpr Layout kQ5_1{32, 5, 256, -1, -1, 320, 352, 384};
inline constexpr Layout kQ4_K{256, 4, -1, 2048, 2176, 2304, 2336, 2368};
inline constexpr Layout kQ5_K{256, 5, 2048, 2560, 2688, 2816, 2848, 2880};
inline constexpr Layout kQ6_K{256, 6, 2048, 3072, -1, 3328, -1, 3360};
// MXFP4 keeps its e2m1 nibbles (the kernel maps them to values) and its exponent bytes.
inline constexpr Layout kMXFP4{32, 4, -1, -1, -1, 256, -1, 272, 1};

// The layout of a packable type, or nullptr.
inline const Layout* LayoutOf(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
      return &kQ8_0;
    case DType::kQ4_0:
      return &kQ4_0;
    case DType::kQ4_1:
      return &kQ4_1;
    case DType::kQ5_0:
      return &kQ5_0;
    case DType::kQ5_1:
      return &kQ5_1;
    case DType::kQ4_K:
      return &kQ4_K;
    case DType::kQ5_K:
      return &kQ5_K;
    case DType::kQ6_K:
      return &kQ6_K;
    case DType::kMXFP4:
      return &kMXFP4;
    default:
      return nullptr;
  }
}

}  // namespace textgen::model::ops::quant_layout
