#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "model/format/weights.h"

namespace textgen::model {

// A whole file mapped read-only into memory. The mapping lives as long as this object.
// Immutable after Open(); safe to read from any thread.
class MappedFile : public WeightStorage {
 public:
  // Maps `path`. NOT_FOUND for a missing file, PERMISSION_DENIED / INVALID_ARGUMENT for an
  // unreadable, non-regular or empty file; messages name the path and the OS error.
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);

  ~MappedFile() override;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

  // Drops the whole pages of [data, data + bytes) from this process (the page cache keeps
  // them; a later read faults them back in with the file's bytes, since nothing writes here).
  void DoneReading(const void* data, size_t bytes) const override;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace textgen::model
