#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace textgen::model {

// Scalar IEEE binary16 / bfloat16 <-> float conversions. Used by ToFloat and the GGUF writer;
// hot paths use oneDNN instead. Pure functions, thread-safe.

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1F) {  // inf / NaN (keep the payload)
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// Round-to-nearest-even, overflow to inf, NaN stays NaN.
inline uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero) in f16: round |f| / 2^-24 to nearest even integer.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // exact (power of two)
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  const uint32_t rounding = 0xFFFu + ((abs >> 13) & 1u);
  const uint32_t rebased = abs - (112u << 23) + rounding;
  return static_cast<uint16_t>(sign | (rebased >> 13));
}

inline float Bf16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t FloatToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace textgen::model
