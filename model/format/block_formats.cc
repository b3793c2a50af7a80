#include "model/format/block_formats.h"

#include <cstring>
#include <iterator>

#include "model/format/float16.h"

namespace textgen::model {
namespace {

// Order: DType enum order, so kFormats[static_cast<int>(dtype)] is dtype's format.
constexpr BlockFormat kFormats[] = {
    {DType::kF32, 0, "F32", 1, 4},        {DType::kF16, 1, "F16", 1, 2},
    {DType::kBF16, 30, "BF16", 1, 2},     {DType::kQ8_0, 8, "Q8_0", 32, 34},
    {DType::kQ4_0, 2, "Q4_0", 32, 18},    {DType::kQ4_1, 3, "Q4_1", 32, 20},
    {DType::kQ5_0, 6, "Q5_0", 32, 22},    {DType::kQ5_1, 7, "Q5_1", 32, 24},
    {DType::kQ2_K, 10, "Q2_K", 256, 84},  {DType::kQ3_K, 11, "Q3_K", 256, 110},
    {DType::kQ4_K, 12, "Q4_K", 256, 144}, {DType::kQ5_K, 13, "Q5_K", 256, 176},
    {DType::kQ6_K, 14, "Q6_K", 256, 210}, {DType::kMXFP4, 39, "MXFP4", 32, 17},
};

float LoadHalf(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return HalfToFloat(bits);
}

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// ---------------------------------------------------------------------------------------------
// 32-element blocks. Element j < 16 is the low nibble of qs[j], element j + 16 its high nibble;
// the 5-bit types keep bit 4 of element i in bit i of the 32-bit qh.

// Q8_0: f16 d, int8 qs[32]; x = q * d.
void DequantizeQ8_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// Q4_0: f16 d, qs[16]; x = d * (q - 8).
void DequantizeQ4_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

// MXFP4: e8m0 e, qs[16] e2m1 codes; x = 2^(e - 128) * value(q), the e2m1 values doubled and
// the scale halved to match (ggml's kvalues_mxfp4 and GGML_E8M0_TO_FP32_HALF).
constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

void DequantizeMXFP4(const uint8_t* b, float* y) {
  const float d = E8m0ToFloatHalf(b[0]);
  const uint8_t* qs = b + 1;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kMxfp4Values[qs[j] & 0x0F]);
    y[j + 16] = d * static_cast<float>(kMxfp4Values[qs[j] >> 4]);
  }
}

// Q4_1: f16 d, f16 m, qs[16]; x = d * q + m.
void DequantizeQ4_1(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float m = LoadHalf(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(qs[j] & 0x0F) + m;
    y[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
  }
}

// Q5_0: f16 d, u32 qh, qs[16]; x = d * (q - 16).
void DequantizeQ5_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const uint32_t qh = LoadU32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    y[j] = d * static_cast<float>(lo - 16);
    y[j + 16] = d * static_cast<float>(hi - 16);
  }
}

// Q5_1: f16 d, f16 m, u32 qh, qs[16]; x = d * q + m.
void DequantizeQ5_1(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float m = LoadHalf(b + 2);
  const uint32_t qh = LoadU32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    y[j] = d * static_cast<float>(lo) + m;
    y[j + 16] = d * static_cast<float>(hi) + m;
  }
}

// ---------------------------------------------------------------------------------------------
// 256-element super-blocks (K-quants). Sub-block scales are applied as (d * scale) * q, minus
// (dmin * min) where the type has minimums: the order ggml and gguf-py use.

// Q2_K: scales[16] (low nibble scale, high nibble min, per 16 elements), qs[64], f16 d, dmin.
// Element 128h + 32s + l holds bits 2s..2s+1 of qs[32h + l].
void DequantizeQ2_K(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = LoadHalf(b + 80);
  const float dmin = LoadHalf(b + 82);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, s = (e % 128) / 32, l = e % 32;
    const uint8_t sc = scales[e / 16];
    const float dl = d * static_cast<float>(sc & 0x0F);
    const float ml = dmin * static_cast<float>(sc >> 4);
    const int q = (qs[32 * h + l] >> (2 * s)) & 3;
    y[e] = dl * static_cast<float>(q) - ml;
  }
}

// Q3_K: hmask[32], qs[64], scales[12] (16 six-bit scales, offset 32), f16 d.
// Element e: 2 low bits as in Q2_K; its high bit is bit e/32 of hmask[e % 32], and a clear
// high bit subtracts 4.
void DequantizeQ3_K(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* packed = b + 96;
  const float d = LoadHalf(b + 108);
  float dl[16];
  for (int s = 0; s < 16; ++s) {
    const int low = (s < 8 ? packed[s] : packed[s - 8] >> 4) & 0x0F;
    const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 0x03;
    dl[s] = d * static_cast<float>((low | (high << 4)) - 32);
  }
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, s = (e % 128) / 32, l = e % 32;
    const int low = (qs[32 * h + l] >> (2 * s)) & 3;
    const int high_set = (hmask[l] >> (e / 32)) & 1;
    y[e] = dl[e / 16] * static_cast<float>(low - (high_set ? 0 : 4));
  }
}

// Q4_K: f16 d, dmin, scales[12], qs[128]. Sub-block 2c + n holds nibble n of qs[32c + l].
void DequantizeQ4_K(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float dmin = LoadHalf(b + 2);
  int scale[8], min[8];
  UnpackKQuantScaleMin(b + 4, scale, min);
  const uint8_t* qs = b + 16;
  for (int sub = 0; sub < 8; ++sub) {
    const float ds = d * static_cast<float>(scale[sub]);
    const float dm = dmin * static_cast<float>(min[sub]);
    const int shift = 4 * (sub % 2);
    for (int l = 0; l < 32; ++l) {
      const int q = (qs[32 * (sub / 2) + l] >> shift) & 0x0F;
      y[32 * sub + l] = ds * static_cast<float>(q) - dm;
    }
  }
}

// Q5_K: as Q4_K plus qh[32] before qs: bit `sub` of qh[l] is bit 4 of sub-block sub's element l.
void DequantizeQ5_K(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float dmin = LoadHalf(b + 2);
  int scale[8], min[8];
  UnpackKQuantScaleMin(b + 4, scale, min);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int sub = 0; sub < 8; ++sub) {
    const float ds = d * static_cast<float>(scale[sub]);
    const float dm = dmin * static_cast<float>(min[sub]);
    const int shift = 4 * (sub % 2);
    for (int l = 0; l < 32; ++l) {
      const int q = ((qs[32 * (sub / 2) + l] >> shift) & 0x0F) | (((qh[l] >> sub) & 1) << 4);
      y[32 * sub + l] = ds * static_cast<float>(q) - dm;
    }
  }
}

// Q6_K: ql[128], qh[64], int8 scales[16], f16 d; x = (d * scale) * (q - 32).
// Element 128h + r: low nibble (r / 64) of ql[64h + r % 64], high 2 bits (r / 32) of
// qh[32h + r % 32].
void DequantizeQ6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = LoadHalf(b + 208);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, r = e % 128;
    const int low = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0x0F;
    const int high = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 0x03;
    const float ds = d * static_cast<float>(scales[e / 16]);
    y[e] = ds * static_cast<float>((low | (high << 4)) - 32);
  }
}

using BlockDequantizer = void (*)(const uint8_t* block, float* out);

BlockDequantizer DequantizerOf(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
      return DequantizeQ8_0;
    case DType::kQ4_0:
      return DequantizeQ4_0;
    case DType::kQ4_1:
      return DequantizeQ4_1;
    case DType::kQ5_0:
      return DequantizeQ5_0;
    case DType::kQ5_1:
      return DequantizeQ5_1;
    case DType::kQ2_K:
      return DequantizeQ2_K;
    case DType::kQ3_K:
      return DequantizeQ3_K;
    case DType::kQ4_K:
      return DequantizeQ4_K;
    case DType::kQ5_K:
      return DequantizeQ5_K;
    case DType::kQ6_K:
      return DequantizeQ6_K;
    case DType::kMXFP4:
      return DequantizeMXFP4;
    default:
      return nullptr;  // the float types are converted element by element
  }
}

}  // namespace

float E8m0ToFloatHalf(uint8_t e) {
  // 2^(e - 128): the exponent field e - 1, or for e < 2 the subnormal 2^-128 or 2^-127.
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : (uint32_t{e} - 1) << 23;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

void UnpackKQuantScaleMin(const uint8_t* p, int* scale, int* min) {
  for (int j = 0; j < 4; ++j) {
    scale[j] = p[j] & 0x3F;
    min[j] = p[j + 4] & 0x3F;
    scale[j + 4] = (p[j + 8] & 0x0F) | ((p[j] >> 2) & 0x30);
    min[j + 4] = (p[j + 8] >> 4) | ((p[j + 4] >> 2) & 0x30);
  }
}

const BlockFormat& FormatOf(DType dtype) { return kFormats[static_cast<int>(dtype)]; }

std::optional<BlockFormat> FindBlockFormat(uint32_t ggml_type) {
  for (const BlockFormat& format : kFormats) {
    if (format.ggml_type == ggml_type) return format;
  }
  return std::nullopt;
}

const char* SupportedTypeNames() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, MXFP4";
}

int64_t BytesOf(DType dtype, int64_t elements) {
  const BlockFormat& f = FormatOf(dtype);
  return elements / f.block_elements * f.block_bytes;
}

void DequantizeToFloat(DType dtype, const uint8_t* src, int64_t elements, float* out) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(out, src, static_cast<size_t>(elements) * sizeof(float));
      return;
    case DType::kF16:
    case DType::kBF16: {
      const bool is_bf16 = dtype == DType::kBF16;
      for (int64_t i = 0; i < elements; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);  // mmap data may be unaligned
        out[i] = is_bf16 ? Bf16ToFloat(bits) : HalfToFloat(bits);
      }
      return;
    }
    default: {
      const BlockFormat& f = FormatOf(dtype);
      const BlockDequantizer dequantize = DequantizerOf(dtype);
      for (int64_t b = 0; b < elements / f.block_elements; ++b) {
        dequantize(src + b * f.block_bytes, out + b * f.block_elements);
      }
      return;
    }
  }
}

static_assert(std::size(kFormats) == static_cast<size_t>(DType::kMXFP4) + 1,
              "one format per DType, in enum order");

}  // namespace textgen::model
