#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace textgen::model::ops {

// exp(x) to about 2 ulp (Cephes expf: range reduction by ln 2, degree-6 polynomial) written
// so that GCC vectorizes it inside `omp simd` loops; libm's expf stays scalar without
// -ffast-math, and SwiGLU / softmax call exp once per element. Deterministic per element.
inline float FastExp(float x) {
  x = x < -87.0f ? -87.0f : x;  // (ternaries vectorize; fmin/fmax become calls)
  x = x > 88.0f ? 88.0f : x;
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f;  // ln 2 split in two for an exact first step
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

}  // namespace textgen::model::ops
