#pragma once

// Random quantized tensors in ggml's block formats, for the quantized kernels' tests and
// benchmarks: random code bytes, f16 scales kept in a realistic range (random bytes there would
// be NaNs and overflows, not weights).

#include <cstdint>
#include <random>
#include <vector>

#include "model/format/block_formats.h"
#include "model/format/float16.h"
#include "model/format/weights.h"

namespace textgen::model::testing {

// Offsets of the f16 fields of one block: the scale, then (if any) the minimum / dmin.
inline std::vector<int> HalfFieldsOf(DType dtype) {
  switch (dtype) {
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K:
      return {0, 2};
    case DType::kQ6_K:
      return {208};
    default:
      return {0};
  }
}

inline std::vector<uint8_t> RandomQuantBlocks(DType dtype, int64_t rows, int64_t cols,
                                              uint32_t seed) {
  const BlockFormat& f = FormatOf(dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(BytesOf(dtype, rows * cols)));
  std::mt19937 rng(seed);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  const std::vector<int> fields = HalfFieldsOf(dtype);
  for (size_t block = 0; block < bytes.size() / f.block_bytes; ++block) {
    for (size_t i = 0; i < fields.size(); ++i) {
      // Q4_1/Q5_1 minimums are negative offsets; K-quant dmin is subtracted (positive).
      float v = scale(rng);
      if (i == 1 && (dtype == DType::kQ4_1 || dtype == DType::kQ5_1)) v = -8.0f * v;
      const uint16_t h = FloatToHalf(v);
      bytes[block * f.block_bytes + fields[i]] = static_cast<uint8_t>(h & 0xFF);
      bytes[block * f.block_bytes + fields[i] + 1] = static_cast<uint8_t>(h >> 8);
    }
  }
  return bytes;
}

}  // namespace textgen::model::testing
