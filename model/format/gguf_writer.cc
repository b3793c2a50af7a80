#include "model/format/gguf_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "model/format/block_formats.h"
#include "model/format/float16.h"

namespace textgen::model {
namespace {

template <typename T>
void Put(std::ostream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof(T));
}

void PutString(std::ostream& out, const std::string& s) {
  Put<uint64_t>(out, s.size());
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

void PutValue(std::ostream& out, const GgufValue& v) {
  switch (v.type) {
    case GgufType::kUint8:
      return Put<uint8_t>(out, static_cast<uint8_t>(std::get<uint64_t>(v.data)));
    case GgufType::kUint16:
      return Put<uint16_t>(out, static_cast<uint16_t>(std::get<uint64_t>(v.data)));
    case GgufType::kUint32:
      return Put<uint32_t>(out, static_cast<uint32_t>(std::get<uint64_t>(v.data)));
    case GgufType::kUint64:
      return Put<uint64_t>(out, std::get<uint64_t>(v.data));
    case GgufType::kInt8:
      return Put<int8_t>(out, static_cast<int8_t>(std::get<int64_t>(v.data)));
    case GgufType::kInt16:
      return Put<int16_t>(out, static_cast<int16_t>(std::get<int64_t>(v.data)));
    case GgufType::kInt32:
      return Put<int32_t>(out, static_cast<int32_t>(std::get<int64_t>(v.data)));
    case GgufType::kInt64:
      return Put<int64_t>(out, std::get<int64_t>(v.data));
    case GgufType::kFloat32:
      return Put<float>(out, static_cast<float>(std::get<double>(v.data)));
    case GgufType::kFloat64:
      return Put<double>(out, std::get<double>(v.data));
    case GgufType::kBool:
      return Put<uint8_t>(out, std::get<bool>(v.data) ? 1 : 0);
    case GgufType::kString:
      return PutString(out, v.string());
    case GgufType::kArray:
      Put<uint32_t>(out, static_cast<uint32_t>(v.element_type));
      Put<uint64_t>(out, v.array().size());
      for (const GgufValue& e : v.array()) PutValue(out, e);
      return;
  }
}

void PutPadding(std::ostream& out, uint64_t written, uint64_t alignment) {
  static constexpr char kZeros[64] = {};
  uint64_t pad = (alignment - written % alignment) % alignment;
  while (pad > 0) {
    const uint64_t n = std::min<uint64_t>(pad, sizeof(kZeros));
    out.write(kZeros, static_cast<std::streamsize>(n));
    pad -= n;
  }
}

uint64_t AlignUp(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> EncodeTensor(DType dtype, std::span<const float> values,
                                                  int64_t row_length) {
  std::vector<uint8_t> out;
  switch (dtype) {
    case DType::kF32:
      out.resize(values.size() * 4);
      std::memcpy(out.data(), values.data(), out.size());
      return out;
    case DType::kF16:
    case DType::kBF16:
      out.resize(values.size() * 2);
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t bits =
            dtype == DType::kF16 ? FloatToHalf(values[i]) : FloatToBf16(values[i]);
        std::memcpy(out.data() + 2 * i, &bits, 2);
      }
      return out;
    case DType::kQ8_0: {
      if (row_length % 32 != 0 || values.size() % 32 != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("Q8_0 needs rows of a multiple of 32 values, got ", row_length));
      }
      out.resize(values.size() / 32 * 34);
      for (size_t b = 0; b < values.size() / 32; ++b) {
        const float* x = values.data() + b * 32;
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        uint8_t* block = out.data() + b * 34;
        const uint16_t d_bits = FloatToHalf(d);
        std::memcpy(block, &d_bits, 2);
        for (int j = 0; j < 32; ++j) {
          block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(x[j] * id)));
        }
      }
      return out;
    }
    default:
      break;
  }
  // The other block formats are read, not written: tests make them with llama-quantize.
  return absl::UnimplementedError(
      absl::StrCat("encoding f32 values as ", DTypeName(dtype), " is not implemented"));
}

void GgufWriter::AddMetadata(std::string key, GgufValue value) {
  metadata_.push_back({std::move(key), std::move(value)});
}

void GgufWriter::SetMetadata(const std::string& key, GgufValue value) {
  for (GgufKv& kv : metadata_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  AddMetadata(key, std::move(value));
}

void GgufWriter::RemoveMetadata(const std::string& key) {
  std::erase_if(metadata_, [&](const GgufKv& kv) { return kv.key == key; });
}

void GgufWriter::RemoveTensor(const std::string& name) {
  std::erase_if(tensors_, [&](const Tensor& t) { return t.name == name; });
}

absl::Status GgufWriter::AddTensor(std::string name, DType dtype, std::vector<int64_t> dims,
                                   std::vector<uint8_t> data) {
  if (dims.empty() || dims.size() > 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", name, ": ", dims.size(), " dims, expected 1..4"));
  }
  int64_t elements = 1;
  for (int64_t d : dims) elements *= d;
  const BlockFormat& format = FormatOf(dtype);
  if (dims[0] % format.block_elements != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", name, ": ", format.name, " row length ", dims[0],
                     " is not a multiple of ", format.block_elements));
  }
  const int64_t expected = BytesOf(dtype, elements);
  if (static_cast<int64_t>(data.size()) != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", name, ": ", data.size(), " data bytes, shape needs ", expected));
  }
  tensors_.push_back({std::move(name), dtype, std::move(dims), std::move(data)});
  return absl::OkStatus();
}

absl::Status GgufWriter::AddFloatTensor(std::string name, DType dtype, std::vector<int64_t> dims,
                                        std::span<const float> values) {
  if (dims.empty()) return absl::InvalidArgumentError(absl::StrCat("tensor ", name, ": no dims"));
  auto data = EncodeTensor(dtype, values, dims[0]);
  if (!data.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", name, ": ", data.status().message()));
  }
  return AddTensor(std::move(name), dtype, std::move(dims), *std::move(data));
}

void GgufWriter::Write(std::ostream& out) const {
  const bool has_alignment = std::any_of(metadata_.begin(), metadata_.end(), [](const GgufKv& kv) {
    return kv.key == "general.alignment";
  });
  Put<uint32_t>(out, 0x46554747);  // "GGUF"
  Put<uint32_t>(out, 3);
  Put<uint64_t>(out, tensors_.size());
  Put<uint64_t>(out, metadata_.size() + (has_alignment ? 0 : 1));
  if (!has_alignment) {
    PutString(out, "general.alignment");
    Put<uint32_t>(out, static_cast<uint32_t>(GgufType::kUint32));
    Put<uint32_t>(out, alignment_);
  }
  for (const GgufKv& kv : metadata_) {
    PutString(out, kv.key);
    Put<uint32_t>(out, static_cast<uint32_t>(kv.value.type));
    PutValue(out, kv.value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    PutString(out, t.name);
    Put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) Put<uint64_t>(out, static_cast<uint64_t>(d));
    Put<uint32_t>(out, GgmlTypeOf(t.dtype));
    Put<uint64_t>(out, offset);
    offset = AlignUp(offset + t.data.size(), alignment_);
  }
  PutPadding(out, static_cast<uint64_t>(out.tellp()), alignment_);
  for (const Tensor& t : tensors_) {
    out.write(reinterpret_cast<const char*>(t.data.data()),
              static_cast<std::streamsize>(t.data.size()));
    PutPadding(out, t.data.size(), alignment_);
  }
}

std::string GgufWriter::Serialize() const {
  std::ostringstream out(std::ios::binary);
  Write(out);
  return std::move(out).str();
}

absl::Status GgufWriter::WriteFile(const std::string& path) const {
  // Written beside it, then renamed over it: a process that has the old file mapped keeps
  // reading whole pages (truncating a mapped file in place makes its readers fault).
  const std::string temporary = absl::StrCat(
      path, ".tmp.", getpid(), ".", std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot create ", temporary));
    Write(out);
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      return absl::DataLossError(absl::StrCat("write to ", temporary, " failed"));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return absl::PermissionDeniedError(absl::StrCat("cannot rename ", temporary, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace textgen::model
