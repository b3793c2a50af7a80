#include "model/weights.h"

#include <cstring>

#include "model/float16.h"

namespace textgen::model {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kQ8_0:
      return "Q8_0";
  }
  return "unknown";
}

void ToFloat(const TensorView& tensor, float* out) {
  const int64_t n = tensor.elements();
  const auto* bytes = static_cast<const uint8_t*>(tensor.data);
  switch (tensor.dtype) {
    case DType::kF32:
      std::memcpy(out, bytes, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16:
    case DType::kBF16: {
      const bool is_bf16 = tensor.dtype == DType::kBF16;
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, bytes + 2 * i, 2);  // mmap data may be unaligned
        out[i] = is_bf16 ? Bf16ToFloat(bits) : HalfToFloat(bits);
      }
      return;
    }
    case DType::kQ8_0: {
      // ggml block_q8_0: f16 scale d, then 32 int8 q; value = d * q. Rows hold cols/32 blocks.
      const int64_t blocks = n / 32;
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* block = bytes + b * 34;
        uint16_t d_bits;
        std::memcpy(&d_bits, block, 2);
        const float d = HalfToFloat(d_bits);
        for (int j = 0; j < 32; ++j) {
          out[b * 32 + j] = d * static_cast<float>(static_cast<int8_t>(block[2 + j]));
        }
      }
      return;
    }
  }
}

}  // namespace textgen::model
