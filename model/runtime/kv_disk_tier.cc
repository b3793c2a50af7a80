#include "model/runtime/kv_disk_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/runtime/kv_block_file.h"
#include "model/runtime/kv_cache.h"
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include "xxhash.h"

namespace textgen::model {
namespace {

namespace fs = std::filesystem;

constexpr char kBlockSuffix[] = ".kvb";
constexpr char kTempPrefix[] = ".tmp-";
// A temporary file this old belongs to a writer that died (a live one renames it within
// milliseconds), on this machine or another sharing the directory.
constexpr auto kStaleTemp = std::chrono::hours(1);

std::string Hex(const BlockKey& key) { return absl::StrFormat("%016x%016x", key.hi, key.lo); }

// A file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Reads or writes all of `iov` (retrying short transfers); false on an error or end of file.
template <typename Transfer>
bool TransferAll(int fd, std::vector<iovec> iov, Transfer transfer) {
  size_t first = 0;
  while (first < iov.size()) {
    const ssize_t n = transfer(fd, iov.data() + first, static_cast<int>(iov.size() - first));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    auto done = static_cast<size_t>(n);
    while (first < iov.size() && done >= iov[first].iov_len) done -= iov[first++].iov_len;
    if (first < iov.size()) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + done;
      iov[first].iov_len -= done;
    }
  }
  return true;
}

std::string Errno(const char* what, const std::string& path) {
  return absl::StrCat(what, " ", path, ": ", std::strerror(errno));
}

}  // namespace

absl::StatusOr<BlockKey> KvDiskNamespace(const std::string& model_path, const KvCacheLayout& layout,
                                         std::string_view kv_dtype) {
  Fd fd(::open(model_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    return absl::NotFoundError(Errno("KV cache directory: cannot read", model_path));
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  const std::string description =
      absl::StrCat("textgen kv v1 layers=", layout.n_layers, " kv_heads=", layout.n_kv_heads,
                   " head_dim=", layout.head_dim, " bytes=", layout.bytes_per_element,
                   " dtype=", std::string(kv_dtype), " block_tokens=", kKvBlockTokens, "\n");
  XXH3_128bits_update(&state, description.data(), description.size());
  std::vector<char> buffer(size_t{8} << 20);
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::DataLossError(Errno("KV cache directory: reading", model_path));
    if (n == 0) break;
    XXH3_128bits_update(&state, buffer.data(), static_cast<size_t>(n));
  }
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return BlockKey{.lo = h.low64, .hi = h.high64};
}

BlockKey KvStateNamespace(const BlockKey& blocks, int64_t state_bytes) {
  const std::string description = absl::StrCat(
      "textgen recurrent states v1 f32 bytes=", state_bytes, " blocks=", blocks.lo, ":", blocks.hi);
  const XXH128_hash_t h = XXH3_128bits(description.data(), description.size());
  return BlockKey{.lo = h.low64, .hi = h.high64};
}

KvDiskTier::KvDiskTier(KvDiskTierOptions options, std::string ns_dir)
    : options_(std::move(options)), ns_dir_(std::move(ns_dir)) {}

KvDiskTier::~KvDiskTier() = default;

absl::StatusOr<std::unique_ptr<KvDiskTier>> KvDiskTier::Open(KvDiskTierOptions options) {
  if (options.block_bytes <= 0 || options.max_bytes < 0) {
    return absl::InvalidArgumentError("KV cache directory: block size and limit must be set");
  }
  std::string ns_dir = (fs::path(options.dir) / Hex(options.name_space)).string();
  std::error_code error;
  fs::create_directories(ns_dir, error);
  if (error) {
    return absl::FailedPreconditionError(
        absl::StrCat("--kv-cache-dir: cannot create ", ns_dir, ": ", error.message()));
  }
  if (::access(ns_dir.c_str(), W_OK | X_OK) != 0) {
    return absl::FailedPreconditionError(Errno("--kv-cache-dir: cannot write", ns_dir));
  }
  auto tier = std::unique_ptr<KvDiskTier>(new KvDiskTier(std::move(options), std::move(ns_dir)));
  tier->Scan(tier->options_.max_bytes);
  return tier;
}

std::string KvDiskTier::PathOf(const BlockKey& key) const {
  const std::string hex = Hex(key);
  return absl::StrCat(ns_dir_, "/", hex.substr(0, 2), "/", hex, kBlockSuffix);
}

void KvDiskTier::Warn(std::string_view message) const {
  if (options_.warn) options_.warn(message);
}

void KvDiskTier::Error(const std::string& message) {
  // A full or failing disk fails every write: the first error and then one in a thousand.
  if (++stats_.errors % 1000 == 1) {
    Warn(absl::StrCat(message, " (", stats_.errors, " file system errors so far)"));
  }
}

void KvDiskTier::Scan(int64_t limit) {
  struct File {
    fs::file_time_type used;
    std::string path;
    int64_t bytes;
  };
  std::vector<File> files;
  int64_t total = 0;
  const auto now = fs::file_time_type::clock::now();
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(ns_dir_, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    std::error_code file_error;  // a file another process removed meanwhile: skip it
    if (!it->is_regular_file(file_error)) continue;
    const std::string name = it->path().filename().string();
    const fs::file_time_type used = it->last_write_time(file_error);
    if (file_error) continue;
    if (name.starts_with(kTempPrefix)) {
      if (now - used > kStaleTemp) fs::remove(it->path(), file_error);
      continue;
    }
    if (!name.ends_with(kBlockSuffix)) continue;
    const auto bytes = static_cast<int64_t>(it->file_size(file_error));
    if (file_error) continue;
    files.push_back(File{used, it->path().string(), bytes});
    total += bytes;
  }
  if (error) Warn(absl::StrCat("KV cache directory: listing ", ns_dir_, ": ", error.message()));
  if (limit >= 0 && total > limit) {
    std::sort(files.begin(), files.end(),
              [](const File& a, const File& b) { return a.used < b.used; });
    // Down to 90% so the next few writes do not each trigger a scan.
    const int64_t target = limit - limit / 10;
    size_t removed = 0;
    while (removed < files.size() && total > target) {
      std::error_code remove_error;
      fs::remove(files[removed].path, remove_error);
      total -= files[removed].bytes;
      ++removed;
      ++stats_.evicted;
    }
    // Forget them by name (a removed block will be written again when evicted from memory).
    known_.clear();
    files.erase(files.begin(), files.begin() + static_cast<std::ptrdiff_t>(removed));
  }
  stats_.files = static_cast<int64_t>(files.size());
  stats_.bytes = total;
}

bool KvDiskTier::Store(const BlockRecord& record, std::span<const std::byte> data) {
  if (known_.contains(record.key) || options_.max_bytes == 0) return false;
  const std::string path = PathOf(record.key);
  const std::string dir = fs::path(path).parent_path().string();
  const std::string temp =
      absl::StrCat(dir, "/", kTempPrefix, ::getpid(), "-", temp_serial_++, "-", Hex(record.key));
  std::error_code error;
  fs::create_directories(dir, error);
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    Error(Errno("KV cache directory: cannot create", temp));
    return false;
  }
  KvBlockFileHeader header = EncodeKvBlockHeader(options_.name_space, record, data.size());
  uint64_t checksum = KvBlockFileChecksum(header, data);
  std::vector<iovec> iov = {
      {header.data(), header.size()},
      {const_cast<std::byte*>(data.data()), data.size()},
      {&checksum, sizeof(checksum)},
  };
  const bool written = TransferAll(fd.get(), std::move(iov), ::writev);
  const bool closed = ::close(fd.release()) == 0;
  if (!written || !closed || ::rename(temp.c_str(), path.c_str()) != 0) {
    Error(Errno("KV cache directory: cannot write", path));
    ::unlink(temp.c_str());
    return false;
  }
  known_.insert(record.key);
  const auto bytes = static_cast<int64_t>(header.size() + data.size() + sizeof(checksum));
  ++stats_.writes;
  stats_.written_bytes += bytes;
  ++stats_.files;
  stats_.bytes += bytes;
  if (stats_.bytes > options_.max_bytes) Scan(options_.max_bytes);
  return true;
}

bool KvDiskTier::Load(const BlockRecord& expected,
                      absl::FunctionRef<std::span<std::byte>()> destination) {
  const std::string path = PathOf(expected.key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    known_.erase(expected.key);
    if (errno != ENOENT) {
      Error(Errno("KV cache directory: cannot open", path));
    }
    return false;
  }
  const std::span<std::byte> out = destination();
  if (out.empty()) return false;
  const size_t want = kKvBlockFileHeaderBytes + out.size() + kKvBlockFileTrailerBytes;
  struct stat st {};
  KvBlockFileHeader header{};
  uint64_t checksum = 0;
  absl::Status status;
  if (::fstat(fd.get(), &st) != 0) {
    status = absl::DataLossError(Errno("cannot stat", path));
  } else if (static_cast<size_t>(st.st_size) != want) {
    status = absl::DataLossError(
        absl::StrCat("KV block file: ", st.st_size, " bytes, want ", want, " (truncated?)"));
  } else if (!TransferAll(fd.get(),
                          {{header.data(), header.size()},
                           {out.data(), out.size()},
                           {&checksum, sizeof(checksum)}},
                          ::readv)) {
    status = absl::DataLossError(Errno("cannot read", path));
  } else {
    status = VerifyKvBlockFile(header, out, checksum, options_.name_space, &expected).status();
  }
  if (!status.ok()) {
    // Refused for good: remove it so no process reads it again (a concurrent writer of the
    // same key renames a whole new file over it; unlink then removes that: one recompute).
    ++stats_.rejected;
    Warn(absl::StrCat("KV cache directory: ignoring ", path, ": ", status.message(),
                      " (the prefix is computed again)"));
    ::unlink(path.c_str());
    known_.erase(expected.key);
    return false;
  }
  // Most recently used, for the size limit of every process sharing the directory.
  ::futimens(fd.get(), nullptr);
  known_.insert(expected.key);
  ++stats_.reads;
  stats_.read_bytes += static_cast<int64_t>(want);
  return true;
}

}  // namespace textgen::model
