#include "model/kernels/huge_page_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace textgen::model::ops {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kRegionBytes = size_t{64} << 20;  // many allocations share one region
constexpr size_t kAlignment = 64;

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

HugePageArena::~HugePageArena() {
  for (const Region& r : regions_) munmap(r.mapping, r.mapping_bytes);
}

absl::StatusOr<void*> HugePageArena::Allocate(size_t bytes) {
  const size_t need = RoundUp(bytes == 0 ? 1 : bytes, kAlignment);
  if (regions_.empty() || static_cast<size_t>(regions_.back().end - regions_.back().next) < need) {
    // Over-map by one huge page so the usable range can start on a 2 MiB boundary: the
    // kernel backs only aligned 2 MiB ranges with huge pages.
    const size_t usable = RoundUp(std::max(need, kRegionBytes), kHugePage);
    const size_t mapping_bytes = usable + kHugePage;
    void* mapping =
        mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) {
      return absl::ResourceExhaustedError(
          absl::StrCat("mapping ", mapping_bytes, " bytes failed: ", std::strerror(errno)));
    }
    const auto base = reinterpret_cast<uintptr_t>(mapping);
    auto* start = reinterpret_cast<std::byte*>(RoundUp(base, kHugePage));
    // Advice only: without THP the memory works the same with small pages.
    madvise(start, usable, MADV_HUGEPAGE);
    regions_.push_back(Region{mapping, mapping_bytes, start, start + usable});
  }
  Region& region = regions_.back();
  void* out = region.next;
  region.next += need;
  return out;
}

}  // namespace textgen::model::ops
