#pragma once

// Random quantized tensors in ggml's block formats, for the quantized kernels' tests and
// benchmarks and for random-weight model files: random code bytes, f16 scales drawn so that a
// typical weight is about `typical` in magnitude (random bytes there would be NaNs and
// overflows, not weights).

#include <cmath>
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
    case DType::kMXFP4:
      return {};  // an e8m0 exponent byte instead
    default:
      return {0};
  }
}

// About the magnitude of (code - offset) * sub-block scale for random codes and scale bytes,
// so that d = typical / this gives weights of about `typical`.
inline float TypicalCodeMagnitude(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
      return 64.0f;
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kMXFP4:
      return 4.0f;
    case DType::kQ5_0:
    case DType::kQ5_1:
      return 8.0f;
    case DType::kQ4_K:
      return 32.0f * 4.0f;
    case DType::kQ5_K:
      return 32.0f * 8.0f;
    case DType::kQ6_K:
      return 64.0f * 16.0f;
    default:
      return 1.0f;
  }
}

inline std::vector<uint8_t> RandomQuantBlocks(DType dtype, int64_t rows, int64_t cols,
                                              uint32_t seed, float typical = 1.0f) {
  const BlockFormat& f = FormatOf(dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(BytesOf(dtype, rows * cols)));
  std::mt19937 rng(seed);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  const float d = typical / TypicalCodeMagnitude(dtype);
  std::uniform_real_distribution<float> scale(0.5f * d, 1.5f * d);
  const std::vector<int> fields = HalfFieldsOf(dtype);
  // MXFP4: a power-of-two scale near d, one step either way.
  const int exponent = 128 + static_cast<int>(std::lround(std::log2(d)));
  for (size_t block = 0; block < bytes.size() / f.block_bytes; ++block) {
    if (dtype == DType::kMXFP4) {
      bytes[block * f.block_bytes] =
          static_cast<uint8_t>(exponent - 1 + static_cast<int>(rng() % 3));
    }
    for (size_t i = 0; i < fields.size(); ++i) {
      // Q4_1/Q5_1 minimums are negative offsets (centring the codes); K-quant dmin is
      // subtracted, times a 6-bit minimum.
      float v = scale(rng);
      if (i == 1 && (dtype == DType::kQ4_1 || dtype == DType::kQ5_1))
        v *= -TypicalCodeMagnitude(dtype);
      const uint16_t h = FloatToHalf(v);
      bytes[block * f.block_bytes + fields[i]] = static_cast<uint8_t>(h & 0xFF);
      bytes[block * f.block_bytes + fields[i] + 1] = static_cast<uint8_t>(h >> 8);
    }
  }
  return bytes;
}

}  // namespace textgen::model::testing
