#include "model/kernels/quant/packed_quant_matrix.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "model/format/block_formats.h"
#include "model/format/float16.h"
#include "model/kernels/quant/quant_layouts.h"

namespace textgen::model::ops {
namespace {

using quant_layout::kQuadBytes;
using quant_layout::Layout;

// One block of one row of W as integers: what the file stores, unpacked.
struct DecodedBlock {
  uint8_t codes[256] = {};
  uint16_t d = 0, m = 0;  // f16 bits (MXFP4: the e8m0 byte): block scale; Q*_1 min, K dmin
  uint8_t scales[16] = {};
  uint8_t mins[8] = {};
};

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Q5_0/Q5_1: qs[16] nibbles (element j low, j + 16 high), bit 4 of element i in bit i of qh.
void DecodeFiveBit(const uint8_t* qs, uint32_t qh, uint8_t* codes) {
  for (int j = 0; j < 16; ++j) {
    codes[j] = static_cast<uint8_t>((qs[j] & 0x0F) | (((qh >> j) & 1u) << 4));
    codes[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
  }
}

// The file's block layouts (block_formats.cc documents them).
void Decode(DType dtype, const uint8_t* b, DecodedBlock& out) {
  switch (dtype) {
    case DType::kQ8_0:
      out.d = LoadU16(b);
      for (int j = 0; j < 32; ++j) out.codes[j] = static_cast<uint8_t>(b[2 + j] ^ 0x80);
      return;
    case DType::kQ4_0:
    case DType::kQ4_1: {
      const bool has_min = dtype == DType::kQ4_1;
      out.d = LoadU16(b);
      if (has_min) out.m = LoadU16(b + 2);
      const uint8_t* qs = b + (has_min ? 4 : 2);
      for (int j = 0; j < 16; ++j) {
        out.codes[j] = qs[j] & 0x0F;
        out.codes[j + 16] = qs[j] >> 4;
      }
      return;
    }
    case DType::kQ5_0:
      out.d = LoadU16(b);
      DecodeFiveBit(b + 6, LoadU32(b + 2), out.codes);
      return;
    case DType::kMXFP4:
      out.d = b[0];
      for (int j = 0; j < 16; ++j) {
        out.codes[j] = b[1 + j] & 0x0F;
        out.codes[j + 16] = b[1 + j] >> 4;
      }
      return;
    case DType::kQ5_1:
      out.d = LoadU16(b);
      out.m = LoadU16(b + 2);
      DecodeFiveBit(b + 8, LoadU32(b + 4), out.codes);
      return;
    case DType::kQ4_K:
    case DType::kQ5_K: {
      const bool five = dtype == DType::kQ5_K;
      out.d = LoadU16(b);
      out.m = LoadU16(b + 2);
      int scale[8], min[8];
      UnpackKQuantScaleMin(b + 4, scale, min);
      for (int sub = 0; sub < 8; ++sub) {
        out.scales[sub] = static_cast<uint8_t>(scale[sub]);
        out.mins[sub] = static_cast<uint8_t>(min[sub]);
      }
      const uint8_t* qh = b + 16;
      const uint8_t* qs = b + (five ? 48 : 16);
      for (int sub = 0; sub < 8; ++sub) {
        for (int l = 0; l < 32; ++l) {
          int q = (qs[32 * (sub / 2) + l] >> (4 * (sub % 2))) & 0x0F;
          if (five) q |= ((qh[l] >> sub) & 1) << 4;
          out.codes[32 * sub + l] = static_cast<uint8_t>(q);
        }
      }
      return;
    }
    case DType::kQ6_K: {
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      for (int e = 0; e < 256; ++e) {
        const int h = e / 128, r = e % 128;
        const int low = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0x0F;
        const int high = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 0x03;
        out.codes[e] = static_cast<uint8_t>(low | (high << 4));
      }
      std::memcpy(out.scales, b + 192, 16);
      out.d = LoadU16(b + 208);
      return;
    }
    default:
      return;  // not packable: PackQuantMatrix refused it
  }
}

// Writes row `col` (0..15) of one packed block from `in`.
void Encode(const Layout& l, const DecodedBlock& in, int col, uint8_t* block) {
  const int n = l.block_elements;
  uint8_t* codes = block + col * 4;
  if (l.code_bits == 8) {
    for (int e = 0; e < n; ++e) codes[(e / 4) * kQuadBytes + e % 4] = in.codes[e];
  } else {
    for (int o = 0; o < n / 8; ++o) {
      for (int b = 0; b < 4; ++b) {
        codes[o * kQuadBytes + b] = static_cast<uint8_t>((in.codes[8 * o + b] & 0x0F) |
                                                         ((in.codes[8 * o + 4 + b] & 0x0F) << 4));
      }
    }
  }
  if (l.code_bits == 5) {
    // One 64-byte plane per 32 k: bit t of byte b is bit 4 of element 4t + b.
    for (int s = 0; s < n / 32; ++s) {
      for (int b = 0; b < 4; ++b) {
        uint8_t bits = 0;
        for (int t = 0; t < 8; ++t) bits |= ((in.codes[32 * s + 4 * t + b] >> 4) & 1) << t;
        block[l.plane + s * kQuadBytes + col * 4 + b] = bits;
      }
    }
  } else if (l.code_bits == 6) {
    // One 64-byte plane per 16 k: bits 2t..2t+1 of byte b are bits 4-5 of element 4t + b.
    for (int s = 0; s < n / 16; ++s) {
      for (int b = 0; b < 4; ++b) {
        uint8_t bits = 0;
        for (int t = 0; t < 4; ++t) bits |= ((in.codes[16 * s + 4 * t + b] >> 4) & 3) << (2 * t);
        block[l.plane + s * kQuadBytes + col * 4 + b] = bits;
      }
    }
  }
  if (l.scales >= 0) {
    const int subs = l.code_bits == 6 ? 16 : 8;
    for (int s = 0; s < subs; ++s) block[l.scales + s * 16 + col] = in.scales[s];
  }
  if (l.mins >= 0) {
    for (int s = 0; s < 8; ++s) block[l.mins + (s / 2) * 32 + col * 2 + s % 2] = in.mins[s];
  }
  if (l.scale_bytes == 1) {
    block[l.d + col] = static_cast<uint8_t>(in.d);
  } else {
    std::memcpy(block + l.d + col * 2, &in.d, 2);
  }
  if (l.m >= 0) std::memcpy(block + l.m + col * 2, &in.m, 2);
}

}  // namespace

bool IsPackableQuantType(DType dtype) { return quant_layout::LayoutOf(dtype) != nullptr; }

int64_t PackedBlockBytes(DType dtype) {
  const Layout* l = quant_layout::LayoutOf(dtype);
  return l == nullptr ? 0 : l->bytes;
}

absl::StatusOr<PackedQuantMatrix> PackQuantMatrix(const TensorView& weight, HugePageArena& arena) {
  const Layout* layout = quant_layout::LayoutOf(weight.dtype);
  if (layout == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no quantized kernel for ", DTypeName(weight.dtype), " weights"));
  }
  if (weight.rows <= 0 || weight.cols <= 0 || weight.cols % layout->block_elements != 0 ||
      weight.rows > (int64_t{1} << 30) || weight.cols > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot pack a ", weight.rows, "x", weight.cols,
                                                   " ", DTypeName(weight.dtype), " matrix"));
  }
  PackedQuantMatrix w;
  w.dtype = weight.dtype;
  w.n = static_cast<int>(weight.rows);
  w.k = static_cast<int>(weight.cols);
  w.panels = (w.n + kQuantPanelColumns - 1) / kQuantPanelColumns;
  w.block_elements = layout->block_elements;
  w.blocks = w.k / w.block_elements;
  w.block_bytes = layout->bytes;
  absl::StatusOr<void*> memory = arena.Allocate(static_cast<size_t>(w.bytes()));
  if (!memory.ok()) return memory.status();
  auto* out = static_cast<uint8_t*>(*memory);  // zero-filled: padding columns stay zero
  w.data = out;
  const auto* src = static_cast<const uint8_t*>(weight.data);
  const int64_t src_block_bytes = FormatOf(weight.dtype).block_bytes;
  const int64_t src_row_bytes = src_block_bytes * w.blocks;
#pragma omp parallel for schedule(static)
  for (int p = 0; p < w.panels; ++p) {
    DecodedBlock decoded;
    for (int col = 0; col < kQuantPanelColumns; ++col) {
      const int64_t row = static_cast<int64_t>(p) * kQuantPanelColumns + col;
      if (row >= w.n) break;
      for (int b = 0; b < w.blocks; ++b) {
        Decode(w.dtype, src + row * src_row_bytes + b * src_block_bytes, decoded);
        Encode(*layout, decoded, col,
               out + (static_cast<int64_t>(p) * w.blocks + b) * w.block_bytes);
      }
    }
  }
  return w;
}

float PackedWeightAt(const PackedQuantMatrix& w, int row, int col) {
  const Layout& l = *quant_layout::LayoutOf(w.dtype);
  const int c = row % kQuantPanelColumns;
  const int e = col % w.block_elements;
  const uint8_t* block = w.Block(row / kQuantPanelColumns, col / w.block_elements);
  const uint8_t byte = block[(l.code_bits == 8 ? e / 4 : e / 8) * kQuadBytes + c * 4 + e % 4];
  int q = l.code_bits == 8 ? byte : ((e % 8) < 4 ? byte & 0x0F : byte >> 4);
  if (l.code_bits == 5) {
    const uint8_t bits = block[l.plane + (e / 32) * kQuadBytes + c * 4 + e % 4];
    q |= ((bits >> ((e % 32) / 4)) & 1) << 4;
  } else if (l.code_bits == 6) {
    const uint8_t bits = block[l.plane + (e / 16) * kQuadBytes + c * 4 + e % 4];
    q |= ((bits >> (2 * ((e % 16) / 4))) & 3) << 4;
  }
  uint16_t d_bits = 0, m_bits = 0;
  if (l.scale_bytes == 1) {
    d_bits = block[l.d + c];
  } else {
    std::memcpy(&d_bits, block + l.d + c * 2, 2);
  }
  if (l.m >= 0) std::memcpy(&m_bits, block + l.m + c * 2, 2);
  const float d =
      l.scale_bytes == 1 ? E8m0ToFloatHalf(static_cast<uint8_t>(d_bits)) : HalfToFloat(d_bits);
  const float m = HalfToFloat(m_bits);
  const auto qf = [](int v) { return static_cast<float>(v); };
  switch (w.dtype) {
    case DType::kQ8_0:
      return qf(q - 128) * d;
    case DType::kQ4_0:
      return d * qf(q - 8);
    case DType::kQ5_0:
      return d * qf(q - 16);
    case DType::kQ4_1:
    case DType::kQ5_1:
      return d * qf(q) + m;
    case DType::kQ4_K:
    case DType::kQ5_K: {
      const int sub = e / 32;
      const float ds = d * qf(block[l.scales + sub * 16 + c]);
      const float dm = m * qf(block[l.mins + (sub / 2) * 32 + c * 2 + sub % 2]);
      return ds * qf(q) - dm;
    }
    case DType::kQ6_K: {
      const float ds = d * qf(static_cast<int8_t>(block[l.scales + (e / 16) * 16 + c]));
      return ds * qf(q - 32);
    }
    case DType::kMXFP4: {
      static constexpr int kValues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
      return d * qf(kValues[q]);
    }
    default:
      return 0.0f;
  }
}

}  // namespace textgen::model::ops
