#pragma once

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"

namespace textgen::model::ops {

// Long-lived memory backed by transparent huge pages where the kernel allows (THP
// "madvise" or "always"), for the packed weights and the KV cache blocks. Why: decoding
// streams every weight once per token, and with 4 KiB pages each page is a TLB miss; on
// this machine 2 MiB pages raised single-sequence bf16 decode by about 45%
// (docs/engine-benchmarks.md). Bump allocation from large anonymous mappings aligned to
// 2 MiB; untouched space costs no resident memory. Nothing is freed before the arena is
// destroyed (owners recycle what they take). Not thread-safe.
class HugePageArena {
 public:
  HugePageArena() = default;
  ~HugePageArena();
  HugePageArena(const HugePageArena&) = delete;
  HugePageArena& operator=(const HugePageArena&) = delete;

  // `bytes` of zero-filled memory aligned to 64 bytes. RESOURCE_EXHAUSTED if the system
  // refuses the mapping.
  absl::StatusOr<void*> Allocate(size_t bytes);

 private:
  struct Region {
    void* mapping = nullptr;  // as returned by mmap
    size_t mapping_bytes = 0;
    std::byte* next = nullptr;  // first free byte (2 MiB-aligned start)
    std::byte* end = nullptr;
  };
  std::vector<Region> regions_;
};

}  // namespace textgen::model::ops
