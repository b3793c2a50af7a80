#pragma once

// How each tensor element type is laid out in a GGUF file (ggml's block formats) and how a run
// of it becomes f32. Quantized types store rows as consecutive blocks: 32 elements for the
// Q*_0/Q*_1 types, 256 ("super-blocks") for the K-quants. Pure functions, thread-safe.

#include <cstdint>
#include <optional>

#include "model/format/weights.h"

namespace textgen::model {

struct BlockFormat {
  DType dtype;
  uint32_t ggml_type;  // the id GGUF stores
  const char* name;    // "Q4_K"
  int block_elements;  // elements per block (1 for the float types)
  int block_bytes;     // bytes per block
};

// The format of a DType (every DType has one).
const BlockFormat& FormatOf(DType dtype);

// The format of a ggml type id, or nullopt when textgen cannot read that type.
std::optional<BlockFormat> FindBlockFormat(uint32_t ggml_type);

// "F32, F16, BF16, Q4_0, ...": every type textgen reads, for error messages.
const char* SupportedTypeNames();

// Bytes of `elements` consecutive elements; `elements` must be a multiple of the block size.
int64_t BytesOf(DType dtype, int64_t elements);

// The 6-bit scales and minimums of a Q4_K/Q5_K block's eight 32-element sub-blocks, packed in
// the 12 bytes at `packed`.
void UnpackKQuantScaleMin(const uint8_t* packed, int* scale, int* min);

// An MXFP4 block's scale: the e8m0 exponent `e` as 2^(e - 128) (half of 2^(e - 127): the
// codes' values are doubled), as ggml's GGML_E8M0_TO_FP32_HALF.
float E8m0ToFloatHalf(uint8_t e);

// Converts `elements` values starting at `src` (block-aligned, may be unaligned in memory) to
// f32, exactly as ggml / gguf-py's dequantizers compute them (same operations in the same order,
// so the results are bit-identical).
void DequantizeToFloat(DType dtype, const uint8_t* src, int64_t elements, float* out);

}  // namespace textgen::model
