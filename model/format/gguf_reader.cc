#include "model/format/gguf_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/format/block_formats.h"

namespace textgen::model {
namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kMaxArrayDepth = 4;
// Bounds memory from a corrupt count: every array element becomes a GgufValue (~56 bytes).
constexpr uint64_t kMaxMetadataElements = uint64_t{1} << 22;
constexpr uint64_t kMaxKeyLength = 1 << 16;
constexpr uint64_t kMaxTensorNameLength = 1 << 10;
constexpr uint64_t kMaxAlignment = 1 << 20;
constexpr int64_t kMaxElements = int64_t{1} << 50;

// Smallest encoded size of one value of `type`, to bound counts by the remaining bytes.
uint64_t MinEncodedSize(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
    case GgufType::kString:
      return 8;
    case GgufType::kArray:
      return 12;
  }
  return 1;
}

bool IsValidType(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kFloat64); }

// Bounds-checked little-endian cursor over the file. `context` prefixes every error.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  absl::Status Need(uint64_t n, const std::string& context, const char* what) const {
    if (n > remaining()) {
      return absl::InvalidArgumentError(absl::StrCat(context, ": ", what, " needs ", n,
                                                     " bytes at offset ", pos_,
                                                     " but the file ends at ", bytes_.size()));
    }
    return absl::OkStatus();
  }

  template <typename T>
  absl::StatusOr<T> Read(const std::string& context, const char* what) {
    TEXTGEN_RETURN_IF_ERROR(Need(sizeof(T), context, what));
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  absl::StatusOr<std::string> ReadString(const std::string& context, const char* what,
                                         uint64_t max_length) {
    TEXTGEN_ASSIGN_OR_RETURN(const uint64_t length, Read<uint64_t>(context, what));
    TEXTGEN_RETURN_IF_ERROR(Need(length, context, what));
    if (length > max_length) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": ", what, " length ", length, " exceeds the limit ", max_length));
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return s;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

class Parser {
 public:
  explicit Parser(std::span<const uint8_t> bytes) : cursor_(bytes) {}

  absl::StatusOr<GgufValue> ReadValue(GgufType type, const std::string& context, int depth) {
    switch (type) {
      case GgufType::kUint8:
        return Unsigned<uint8_t>(type, context);
      case GgufType::kUint16:
        return Unsigned<uint16_t>(type, context);
      case GgufType::kUint32:
        return Unsigned<uint32_t>(type, context);
      case GgufType::kUint64:
        return Unsigned<uint64_t>(type, context);
      case GgufType::kInt8:
        return Signed<int8_t>(type, context);
      case GgufType::kInt16:
        return Signed<int16_t>(type, context);
      case GgufType::kInt32:
        return Signed<int32_t>(type, context);
      case GgufType::kInt64:
        return Signed<int64_t>(type, context);
      case GgufType::kFloat32: {
        TEXTGEN_ASSIGN_OR_RETURN(const float v, cursor_.Read<float>(context, "float32 value"));
        return GgufValue::Float32(v);
      }
      case GgufType::kFloat64: {
        TEXTGEN_ASSIGN_OR_RETURN(const double v, cursor_.Read<double>(context, "float64 value"));
        return GgufValue::Float64(v);
      }
      case GgufType::kBool: {
        TEXTGEN_ASSIGN_OR_RETURN(const uint8_t v, cursor_.Read<uint8_t>(context, "bool value"));
        if (v > 1) {
          return absl::InvalidArgumentError(absl::StrCat(context, ": bool value ", v, " at offset ",
                                                         cursor_.pos() - 1, " is neither 0 nor 1"));
        }
        return GgufValue::Bool(v == 1);
      }
      case GgufType::kString: {
        TEXTGEN_ASSIGN_OR_RETURN(std::string s,
                                 cursor_.ReadString(context, "string value", cursor_.remaining()));
        return GgufValue::String(std::move(s));
      }
      case GgufType::kArray:
        return ReadArray(context, depth);
    }
    return absl::InternalError("unreachable GGUF type");
  }

  Cursor& cursor() { return cursor_; }

 private:
  template <typename T>
  absl::StatusOr<GgufValue> Unsigned(GgufType type, const std::string& context) {
    TEXTGEN_ASSIGN_OR_RETURN(const T v, cursor_.Read<T>(context, GgufTypeName(type)));
    GgufValue value;
    value.type = type;
    value.data = static_cast<uint64_t>(v);
    return value;
  }
  template <typename T>
  absl::StatusOr<GgufValue> Signed(GgufType type, const std::string& context) {
    TEXTGEN_ASSIGN_OR_RETURN(const T v, cursor_.Read<T>(context, GgufTypeName(type)));
    GgufValue value;
    value.type = type;
    value.data = static_cast<int64_t>(v);
    return value;
  }

  absl::StatusOr<GgufValue> ReadArray(const std::string& context, int depth) {
    if (depth >= kMaxArrayDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": arrays nested deeper than ", kMaxArrayDepth));
    }
    TEXTGEN_ASSIGN_OR_RETURN(const uint32_t raw_type,
                             cursor_.Read<uint32_t>(context, "array element type"));
    if (!IsValidType(raw_type)) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": invalid array element type ", raw_type));
    }
    const auto element_type = static_cast<GgufType>(raw_type);
    TEXTGEN_ASSIGN_OR_RETURN(const uint64_t count, cursor_.Read<uint64_t>(context, "array length"));
    // A corrupt count must not allocate: bound it by what the rest of the file can hold.
    const uint64_t max_count = cursor_.remaining() / MinEncodedSize(element_type);
    if (count > max_count) {
      return absl::InvalidArgumentError(absl::StrCat(
          context, ": array of ", count, " ", GgufTypeName(element_type), " at offset ",
          cursor_.pos(), " cannot fit in the remaining ", cursor_.remaining(), " bytes"));
    }
    total_elements_ += count;
    if (total_elements_ > kMaxMetadataElements) {
      return absl::InvalidArgumentError(absl::StrCat(context, ": metadata arrays hold more than ",
                                                     kMaxMetadataElements, " elements"));
    }
    std::vector<GgufValue> elements;
    elements.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      // The element index is added only on error: building it per element would cost a
      // string per vocabulary entry.
      absl::StatusOr<GgufValue> v = ReadValue(element_type, context, depth + 1);
      if (!v.ok()) {
        return absl::Status(v.status().code(),
                            absl::StrCat(v.status().message(), " (array element ", i, ")"));
      }
      elements.push_back(*std::move(v));
    }
    return GgufValue::Array(element_type, std::move(elements));
  }

  Cursor cursor_;
  uint64_t total_elements_ = 0;
};

absl::Status TypeError(const GgufFile& file, size_t index, const std::string& expected) {
  const GgufKv& kv = file.metadata[index];
  std::string got = GgufTypeName(kv.value.type);
  if (kv.value.type == GgufType::kArray) {
    got = absl::StrCat("array of ", GgufTypeName(kv.value.element_type));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("metadata key #", index, " (", kv.key, "): expected ", expected, ", got ", got));
}

absl::StatusOr<size_t> KeyIndex(const GgufFile& file, std::string_view key) {
  auto it = file.key_index.find(std::string(key));
  if (it == file.key_index.end()) {
    return absl::NotFoundError(absl::StrCat("missing metadata key ", std::string(key)));
  }
  return it->second;
}

// Sets tensor.dtype and tensor.nbytes, or says why the tensor's type/shape is unusable.
absl::Status ComputeTensorSize(GgufTensorInfo& tensor, const std::string& context) {
  int64_t elements = 1;
  for (int d = 0; d < tensor.n_dims; ++d) {
    if (tensor.dims[d] > kMaxElements / elements) {
      return absl::InvalidArgumentError(absl::StrCat(
          context, ": shape makes the element count exceed ", kMaxElements, " at dimension ", d));
    }
    elements *= tensor.dims[d];
  }
  tensor.elements = elements;
  const std::optional<BlockFormat> format = FindBlockFormat(tensor.ggml_type);
  if (!format.has_value()) {
    return absl::UnimplementedError(
        absl::StrCat(context, ": ggml type ", GgmlTypeName(tensor.ggml_type),
                     " is not supported (supported: ", SupportedTypeNames(), ")"));
  }
  if (tensor.dims[0] % format->block_elements != 0) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": ", format->name, " row length ",
                                                   tensor.dims[0], " is not a multiple of its ",
                                                   format->block_elements, "-element block"));
  }
  tensor.dtype = format->dtype;
  tensor.nbytes = static_cast<uint64_t>(BytesOf(format->dtype, elements));
  return absl::OkStatus();
}

}  // namespace

const char* GgufTypeName(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
      return "uint8";
    case GgufType::kInt8:
      return "int8";
    case GgufType::kUint16:
      return "uint16";
    case GgufType::kInt16:
      return "int16";
    case GgufType::kUint32:
      return "uint32";
    case GgufType::kInt32:
      return "int32";
    case GgufType::kFloat32:
      return "float32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kUint64:
      return "uint64";
    case GgufType::kInt64:
      return "int64";
    case GgufType::kFloat64:
      return "float64";
  }
  return "invalid";
}

std::string GgmlTypeName(uint32_t ggml_type) {
  static constexpr const char* kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "Q4_2",   "Q4_3",  "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16"};
  if (ggml_type < std::size(kNames)) return absl::StrCat(kNames[ggml_type], " (", ggml_type, ")");
  return absl::StrCat("#", ggml_type);
}

uint32_t GgmlTypeOf(DType dtype) { return FormatOf(dtype).ggml_type; }

GgufValue GgufValue::StringArray(const std::vector<std::string>& v) {
  std::vector<GgufValue> elements;
  elements.reserve(v.size());
  for (const std::string& s : v) elements.push_back(String(s));
  return Array(GgufType::kString, std::move(elements));
}

GgufValue GgufValue::Float32Array(const std::vector<float>& v) {
  std::vector<GgufValue> elements;
  elements.reserve(v.size());
  for (float f : v) elements.push_back(Float32(f));
  return Array(GgufType::kFloat32, std::move(elements));
}

GgufValue GgufValue::Int32Array(const std::vector<int>& v) {
  std::vector<GgufValue> elements;
  elements.reserve(v.size());
  for (int i : v) elements.push_back(Int32(i));
  return Array(GgufType::kInt32, std::move(elements));
}

const GgufKv* GgufFile::FindKey(std::string_view key) const {
  auto it = key_index.find(std::string(key));
  return it == key_index.end() ? nullptr : &metadata[it->second];
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index.find(std::string(name));
  return it == tensor_index.end() ? nullptr : &tensors[it->second];
}

absl::StatusOr<int64_t> GgufFile::GetInt(std::string_view key, int64_t min, int64_t max) const {
  TEXTGEN_ASSIGN_OR_RETURN(const size_t index, KeyIndex(*this, key));
  const GgufValue& v = metadata[index].value;
  bool in_range = false;
  int64_t result = 0;
  if (const auto* u = std::get_if<uint64_t>(&v.data); u) {
    in_range = *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
               static_cast<int64_t>(*u) >= min && static_cast<int64_t>(*u) <= max;
    result = static_cast<int64_t>(*u);
  } else if (const auto* s = std::get_if<int64_t>(&v.data)) {
    in_range = *s >= min && *s <= max;
    result = *s;
  } else {
    return TypeError(*this, index, "an integer");
  }
  if (!in_range) {
    return absl::InvalidArgumentError(absl::StrCat("metadata key #", index, " (", std::string(key),
                                                   "): value out of range [", min, ", ", max, "]"));
  }
  return result;
}

absl::StatusOr<std::vector<int64_t>> GgufFile::GetIntArray(std::string_view key, int64_t min,
                                                           int64_t max) const {
  TEXTGEN_ASSIGN_OR_RETURN(const size_t index, KeyIndex(*this, key));
  const GgufValue& v = metadata[index].value;
  if (v.type != GgufType::kArray) return TypeError(*this, index, "an array of integers");
  std::vector<int64_t> result;
  result.reserve(v.array().size());
  for (const GgufValue& element : v.array()) {
    int64_t value = 0;
    if (const auto* u = std::get_if<uint64_t>(&element.data)) {
      value = *u > static_cast<uint64_t>(max) ? max + 1 : static_cast<int64_t>(*u);
    } else if (const auto* s = std::get_if<int64_t>(&element.data)) {
      value = *s;
    } else {
      return TypeError(*this, index, "an array of integers");
    }
    if (value < min || value > max) {
      return absl::InvalidArgumentError(absl::StrCat("metadata key #", index, " (",
                                                     std::string(key), "): entry ", result.size(),
                                                     " out of range [", min, ", ", max, "]"));
    }
    result.push_back(value);
  }
  return result;
}

absl::StatusOr<double> GgufFile::GetFloat(std::string_view key) const {
  TEXTGEN_ASSIGN_OR_RETURN(const size_t index, KeyIndex(*this, key));
  const GgufValue& v = metadata[index].value;
  if (const auto* d = std::get_if<double>(&v.data)) return *d;
  return TypeError(*this, index, "float32");
}

absl::StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  TEXTGEN_ASSIGN_OR_RETURN(const size_t index, KeyIndex(*this, key));
  const GgufValue& v = metadata[index].value;
  if (const auto* b = std::get_if<bool>(&v.data)) return *b;
  return TypeError(*this, index, "bool");
}

absl::StatusOr<std::string> GgufFile::GetString(std::string_view key) const {
  TEXTGEN_ASSIGN_OR_RETURN(const size_t index, KeyIndex(*this, key));
  const GgufValue& v = metadata[index].value;
  if (const auto* s = std::get_if<std::string>(&v.data)) return *s;
  return TypeError(*this, index, "string");
}

absl::StatusOr<const std::vector<GgufValue>*> GgufFile::GetArray(std::string_view key,
                                                                 GgufType element_type) const {
  TEXTGEN_ASSIGN_OR_RETURN(const size_t index, KeyIndex(*this, key));
  const GgufValue& v = metadata[index].value;
  if (v.type != GgufType::kArray || v.element_type != element_type) {
    return TypeError(*this, index, absl::StrCat("array of ", GgufTypeName(element_type)));
  }
  return &v.array();
}

namespace {

struct GgufCounts {
  uint64_t tensors = 0;
  uint64_t metadata = 0;
};

// Magic, version and the counts, which must fit in the file.
absl::StatusOr<GgufCounts> ReadHeader(Cursor& cursor, GgufFile& file,
                                      std::span<const uint8_t> bytes) {
  const std::string header = "GGUF header";
  GgufCounts counts;
  TEXTGEN_ASSIGN_OR_RETURN(const uint32_t magic, cursor.Read<uint32_t>(header, "magic"));
  if (magic != kGgufMagic) {
    return absl::InvalidArgumentError(absl::StrCat(
        header, ": bad magic 0x", absl::Hex(magic, absl::kZeroPad8), " (expected \"GGUF\")"));
  }
  TEXTGEN_ASSIGN_OR_RETURN(file.version, cursor.Read<uint32_t>(header, "version"));
  if (file.version != 2 && file.version != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(header, ": unsupported version ", file.version, " (supported: 2, 3)"));
  }
  TEXTGEN_ASSIGN_OR_RETURN(counts.tensors, cursor.Read<uint64_t>(header, "tensor count"));
  TEXTGEN_ASSIGN_OR_RETURN(counts.metadata, cursor.Read<uint64_t>(header, "metadata count"));
  // Smallest encodings: kv = key length + 1-byte key + type + 1-byte value; tensor info =
  // name length + 1-byte name + n_dims + type + offset.
  if (counts.metadata > cursor.remaining() / 14) {
    return absl::InvalidArgumentError(absl::StrCat(header, ": metadata count ", counts.metadata,
                                                   " cannot fit in a file of ", bytes.size(),
                                                   " bytes"));
  }
  if (counts.tensors > cursor.remaining() / 25) {
    return absl::InvalidArgumentError(absl::StrCat(header, ": tensor count ", counts.tensors,
                                                   " cannot fit in a file of ", bytes.size(),
                                                   " bytes"));
  }
  return counts;
}

// The key-value pairs (no key twice), and the alignment they may set.
absl::Status ReadMetadata(Parser& parser, GgufFile& file, uint64_t kv_count) {
  Cursor& cursor = parser.cursor();
  file.metadata.reserve(kv_count);
  for (uint64_t i = 0; i < kv_count; ++i) {
    const std::string context = absl::StrCat("metadata key #", i);
    TEXTGEN_ASSIGN_OR_RETURN(std::string key, cursor.ReadString(context, "key", kMaxKeyLength));
    const std::string named = absl::StrCat(context, " (", key, ")");
    TEXTGEN_ASSIGN_OR_RETURN(const uint32_t raw_type, cursor.Read<uint32_t>(named, "value type"));
    if (!IsValidType(raw_type)) {
      return absl::InvalidArgumentError(
          absl::StrCat(named, ": invalid value type ", raw_type, " at offset ", cursor.pos() - 4));
    }
    TEXTGEN_ASSIGN_OR_RETURN(GgufValue value,
                             parser.ReadValue(static_cast<GgufType>(raw_type), named, 0));
    if (!file.key_index.emplace(key, file.metadata.size()).second) {
      return absl::InvalidArgumentError(absl::StrCat(named, ": duplicate key"));
    }
    file.metadata.push_back({std::move(key), std::move(value)});
  }
  if (file.FindKey("general.alignment") != nullptr) {
    TEXTGEN_ASSIGN_OR_RETURN(const int64_t alignment,
                             file.GetInt("general.alignment", 1, kMaxAlignment));
    if ((alignment & (alignment - 1)) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("metadata key general.alignment: ", alignment, " is not a power of two"));
    }
    file.alignment = static_cast<uint64_t>(alignment);
  }
  return absl::OkStatus();
}

// Each tensor's name, shape, type and offset (no name twice, offsets aligned).
absl::Status ReadTensorInfos(Cursor& cursor, GgufFile& file, uint64_t tensor_count) {
  file.tensors.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    const std::string context = absl::StrCat("tensor info #", i);
    GgufTensorInfo tensor;
    TEXTGEN_ASSIGN_OR_RETURN(tensor.name, cursor.ReadString(context, "name", kMaxTensorNameLength));
    const std::string named = absl::StrCat("tensor ", tensor.name);
    TEXTGEN_ASSIGN_OR_RETURN(const uint32_t n_dims, cursor.Read<uint32_t>(named, "n_dims"));
    if (n_dims < 1 || n_dims > 4) {
      return absl::InvalidArgumentError(
          absl::StrCat(named, ": n_dims ", n_dims, " is not in [1, 4]"));
    }
    tensor.n_dims = static_cast<int>(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      TEXTGEN_ASSIGN_OR_RETURN(const uint64_t dim, cursor.Read<uint64_t>(named, "dimension"));
      if (dim == 0 || dim > static_cast<uint64_t>(kMaxElements)) {
        return absl::InvalidArgumentError(absl::StrCat(named, ": dimension ", d, " = ", dim,
                                                       " is not in [1, ", kMaxElements, "]"));
      }
      tensor.dims[d] = static_cast<int64_t>(dim);
    }
    TEXTGEN_ASSIGN_OR_RETURN(tensor.ggml_type, cursor.Read<uint32_t>(named, "type"));
    TEXTGEN_ASSIGN_OR_RETURN(tensor.offset, cursor.Read<uint64_t>(named, "data offset"));
    TEXTGEN_RETURN_IF_ERROR(ComputeTensorSize(tensor, named));
    if (tensor.offset % file.alignment != 0) {
      return absl::InvalidArgumentError(absl::StrCat(named, ": data offset ", tensor.offset,
                                                     " is not a multiple of the alignment ",
                                                     file.alignment));
    }
    if (!file.tensor_index.emplace(tensor.name, file.tensors.size()).second) {
      return absl::InvalidArgumentError(absl::StrCat(named, ": duplicate tensor name"));
    }
    file.tensors.push_back(std::move(tensor));
  }
  return absl::OkStatus();
}

// The data section after the infos: every tensor inside the file, none overlapping another.
absl::Status PlaceTensorData(Cursor& cursor, GgufFile& file, std::span<const uint8_t> bytes) {
  const uint64_t end_of_infos = cursor.pos();
  file.data_offset = (end_of_infos + file.alignment - 1) / file.alignment * file.alignment;
  if (!file.tensors.empty() && file.data_offset > bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GGUF data section: starts at ", file.data_offset, " beyond file size ", bytes.size()));
  }
  for (GgufTensorInfo& tensor : file.tensors) {
    const uint64_t size = bytes.size();
    const bool fits = tensor.offset <= size && file.data_offset <= size - tensor.offset &&
                      tensor.nbytes <= size - tensor.offset - file.data_offset;
    if (!fits) {
      // Print the range without overflowing: saturate at UINT64_MAX.
      const uint64_t max = std::numeric_limits<uint64_t>::max();
      const uint64_t begin =
          tensor.offset > max - file.data_offset ? max : file.data_offset + tensor.offset;
      const uint64_t end = tensor.nbytes > max - begin ? max : begin + tensor.nbytes;
      return absl::InvalidArgumentError(absl::StrCat("tensor ", tensor.name, ": data range [",
                                                     begin, ", ", end, ") exceeds file size ",
                                                     size));
    }
    tensor.file_offset = file.data_offset + tensor.offset;
  }
  // Overlapping tensors mean a corrupt offset table.
  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(file.tensors.size());
  for (const GgufTensorInfo& t : file.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto* a, const auto* b) { return a->file_offset < b->file_offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensorInfo& prev = *by_offset[i - 1];
    const GgufTensorInfo& cur = *by_offset[i];
    if (prev.file_offset + prev.nbytes > cur.file_offset) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", cur.name, ": data range [", cur.file_offset, ", ",
                       cur.file_offset + cur.nbytes, ") overlaps tensor ", prev.name, " [",
                       prev.file_offset, ", ", prev.file_offset + prev.nbytes, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GgufFile> ParseGguf(std::span<const uint8_t> bytes) {
  GgufFile file;
  file.bytes = bytes;
  Parser parser(bytes);
  Cursor& cursor = parser.cursor();
  TEXTGEN_ASSIGN_OR_RETURN(const GgufCounts counts, ReadHeader(cursor, file, bytes));
  TEXTGEN_RETURN_IF_ERROR(ReadMetadata(parser, file, counts.metadata));
  TEXTGEN_RETURN_IF_ERROR(ReadTensorInfos(cursor, file, counts.tensors));
  TEXTGEN_RETURN_IF_ERROR(PlaceTensorData(cursor, file, bytes));
  return file;
}

}  // namespace textgen::model
