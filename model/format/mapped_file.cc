#include "model/format/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace textgen::model {
namespace {

absl::Status ErrnoStatus(int error, const std::string& what, const std::string& path) {
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InvalidArgumentError(message);
  }
}

// Closes the descriptor on every exit path; the mapping stays valid after close.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "cannot stat", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("not a regular file: ", path));
  }
  if (st.st_size == 0) return absl::InvalidArgumentError(absl::StrCat("file is empty: ", path));
  const size_t size = static_cast<size_t>(st.st_size);
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) return ErrnoStatus(errno, "cannot mmap", path);
  return std::unique_ptr<MappedFile>(new MappedFile(path, static_cast<const uint8_t*>(addr), size));
}

MappedFile::~MappedFile() { ::munmap(const_cast<uint8_t*>(data_), size_); }

void MappedFile::DoneReading(const void* data, size_t bytes) const {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const auto mapped_begin = reinterpret_cast<uintptr_t>(data_);
  if (begin < mapped_begin || begin + bytes > mapped_begin + size_) return;
  // Only pages wholly inside the range: a neighbour sharing a page may still be wanted.
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + bytes) / page * page;
  if (last <= first) return;
  // Advice on a read-only private file mapping: failure only means the pages stay.
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace textgen::model
