#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/format/gguf_reader.h"
#include "model/format/weights.h"

namespace textgen::model {

// Encodes f32 values as `dtype` (F16/BF16 round to nearest even; Q8_0 as ggml does: per block of
// 32, d = max|x| / 127, q = round(x / d)). `row_length` must be a multiple of 32 for Q8_0.
absl::StatusOr<std::vector<uint8_t>> EncodeTensor(DType dtype, std::span<const float> values,
                                                  int64_t row_length);

// Builds a GGUF v3 file: metadata in insertion order, then tensor infos and aligned data.
// general.alignment is written unless the caller added it. Used by tests and tools.
// Not thread-safe: one writer per thread.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = 32) : alignment_(alignment) {}

  void AddMetadata(std::string key, GgufValue value);
  // Replaces `key`'s value, or adds it (tests: one key of a file made otherwise).
  void SetMetadata(const std::string& key, GgufValue value);
  // Drops the key or the tensor if present (tests: a file missing one).
  void RemoveMetadata(const std::string& key);
  void RemoveTensor(const std::string& name);
  // `dims` in GGUF order (innermost first, 1..4 of them); `data` already encoded as `dtype`.
  absl::Status AddTensor(std::string name, DType dtype, std::vector<int64_t> dims,
                         std::vector<uint8_t> data);
  // Encodes `values` (row-major, rows of dims[0]) as `dtype` and adds the tensor.
  absl::Status AddFloatTensor(std::string name, DType dtype, std::vector<int64_t> dims,
                              std::span<const float> values);

  // The whole file.
  std::string Serialize() const;
  // Writes the file whole under a temporary name beside `path`, then renames it over `path`.
  absl::Status WriteFile(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> dims;
    std::vector<uint8_t> data;
  };
  void Write(std::ostream& out) const;

  uint32_t alignment_;
  std::vector<GgufKv> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace textgen::model
