#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "model/format/weights.h"

namespace textgen::model {

// GGUF metadata value types (gguf spec numbering).
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
const char* GgufTypeName(GgufType type);

// The name of any ggml tensor type id ("Q4_K (12)"), also of types textgen cannot read (which
// model/format/block_formats.h lists).
std::string GgmlTypeName(uint32_t ggml_type);
uint32_t GgmlTypeOf(DType dtype);

// One metadata value. Unsigned integers are held as uint64_t, signed as int64_t, float32/64
// as double, arrays as a vector of values all of `element_type`.
struct GgufValue {
  GgufType type = GgufType::kUint8;
  GgufType element_type = GgufType::kUint8;  // arrays only
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> data;

  static GgufValue Uint8(uint8_t v) { return {GgufType::kUint8, {}, uint64_t{v}}; }
  static GgufValue Int8(int8_t v) { return {GgufType::kInt8, {}, int64_t{v}}; }
  static GgufValue Uint16(uint16_t v) { return {GgufType::kUint16, {}, uint64_t{v}}; }
  static GgufValue Int16(int16_t v) { return {GgufType::kInt16, {}, int64_t{v}}; }
  static GgufValue Uint32(uint32_t v) { return {GgufType::kUint32, {}, uint64_t{v}}; }
  static GgufValue Int32(int32_t v) { return {GgufType::kInt32, {}, int64_t{v}}; }
  static GgufValue Uint64(uint64_t v) { return {GgufType::kUint64, {}, v}; }
  static GgufValue Int64(int64_t v) { return {GgufType::kInt64, {}, v}; }
  static GgufValue Float32(float v) { return {GgufType::kFloat32, {}, double{v}}; }
  static GgufValue Float64(double v) { return {GgufType::kFloat64, {}, v}; }
  static GgufValue Bool(bool v) { return {GgufType::kBool, {}, v}; }
  static GgufValue String(std::string v) { return {GgufType::kString, {}, std::move(v)}; }
  static GgufValue Array(GgufType element_type, std::vector<GgufValue> elements) {
    return {GgufType::kArray, element_type, std::move(elements)};
  }
  static GgufValue StringArray(const std::vector<std::string>& v);
  static GgufValue Float32Array(const std::vector<float>& v);
  static GgufValue Int32Array(const std::vector<int>& v);

  bool operator==(const GgufValue&) const = default;

  const std::vector<GgufValue>& array() const { return std::get<std::vector<GgufValue>>(data); }
  const std::string& string() const { return std::get<std::string>(data); }
};

struct GgufKv {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  int n_dims = 0;
  std::array<int64_t, 4> dims = {1, 1, 1, 1};  // ggml order: dims[0] is the innermost (row length)
  uint32_t ggml_type = 0;
  DType dtype = DType::kF32;
  uint64_t offset = 0;       // relative to the data section, as stored
  uint64_t file_offset = 0;  // absolute: data_offset + offset
  uint64_t nbytes = 0;
  int64_t elements = 0;
};

// A parsed GGUF file. Tensor data stays in `bytes` (not owned: usually an mmap that must
// outlive this object). Immutable after ParseGguf; safe to read from any thread.
struct GgufFile {
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;
  std::vector<GgufKv> metadata;         // file order
  std::vector<GgufTensorInfo> tensors;  // file order
  std::span<const uint8_t> bytes;

  // nullptr when absent.
  const GgufKv* FindKey(std::string_view key) const;
  const GgufTensorInfo* FindTensor(std::string_view name) const;
  const uint8_t* TensorData(const GgufTensorInfo& tensor) const {
    return bytes.data() + tensor.file_offset;
  }

  // Typed lookups. NOT_FOUND when absent; INVALID_ARGUMENT naming the key's index, name, expected
  // and actual type (or the range) otherwise. Integers accept any integer type whose value fits.
  absl::StatusOr<int64_t> GetInt(std::string_view key, int64_t min, int64_t max) const;
  // The elements of an array of any integer type, each in [min, max] (max < INT64_MAX).
  absl::StatusOr<std::vector<int64_t>> GetIntArray(std::string_view key, int64_t min,
                                                   int64_t max) const;
  absl::StatusOr<double> GetFloat(std::string_view key) const;
  absl::StatusOr<bool> GetBool(std::string_view key) const;
  absl::StatusOr<std::string> GetString(std::string_view key) const;
  // The elements of an array of `element_type`.
  absl::StatusOr<const std::vector<GgufValue>*> GetArray(std::string_view key,
                                                         GgufType element_type) const;

  std::unordered_map<std::string, size_t> key_index;     // key -> index in metadata
  std::unordered_map<std::string, size_t> tensor_index;  // name -> index in tensors
};

// Parses and validates a GGUF v2/v3 file held in memory. Every count, length, offset and size
// is checked against the buffer before use; errors name the field and where it is.
absl::StatusOr<GgufFile> ParseGguf(std::span<const uint8_t> bytes);

}  // namespace textgen::model
