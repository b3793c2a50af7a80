#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/kernels/huge_page_arena.h"
#include "model/runtime/prefix_index.h"

namespace textgen::model {

// The fixed-size buffers of a hybrid model's recurrent state (all its recurrent layers' state
// after one position), for a KvCache: each live sequence's own state, and snapshots of states
// at block boundaries published with the prefix index's blocks, so a later sequence that
// shares the prefix continues from the snapshot instead of recomputing it. Buffers are made
// lazily and recycled (states and snapshots are the same size). A published snapshot belongs
// to the indexed block it ends at and goes when that block is evicted, or on its own, least
// recently used first, when a buffer is needed. Accounting against the budget is the cache's.
// Engine thread only.
class RecurrentStatePool {
 public:
  explicit RecurrentStatePool(int64_t state_bytes) : state_bytes_(state_bytes) {}
  RecurrentStatePool(const RecurrentStatePool&) = delete;
  RecurrentStatePool& operator=(const RecurrentStatePool&) = delete;

  int64_t state_bytes() const { return state_bytes_; }
  // Buffers ever made (free, held or published).
  int64_t made() const { return made_; }
  // A buffer: a free one, else a new one from `arena`.
  absl::StatusOr<std::byte*> Take(ops::HugePageArena& arena);
  bool HasFree() const { return !free_.empty(); }
  void Give(std::byte* buffer) { free_.push_back(buffer); }

  // ---- Published snapshots ----
  // Stores `buffer` (a state after `block`'s last token) as `block`'s snapshot; false (the
  // caller keeps the buffer) when the block has one already: it is the same state.
  bool Publish(BlockId block, std::byte* buffer);
  // `block`'s snapshot, marked recently used; null when it has none.
  const std::byte* Find(BlockId block);
  bool Has(BlockId block) const { return published_.contains(block); }
  // Frees `block`'s snapshot (the block is leaving the index); no-op without one.
  void Drop(BlockId block);
  // Frees the least recently used snapshot; false when there is none.
  bool EvictLeastRecentlyUsed();
  int64_t published() const { return static_cast<int64_t>(published_.size()); }
  // Every published snapshot's block and bytes (the drain writes them to disk).
  template <typename Fn>
  void ForEachPublished(Fn fn) const {
    for (const auto& [block, snapshot] : published_) fn(block, snapshot.data);
  }
  int64_t evicted() const { return evicted_; }

 private:
  struct Snapshot {
    std::byte* data = nullptr;
    uint64_t last_used = 0;
  };
  int64_t state_bytes_;
  int64_t made_ = 0;
  int64_t evicted_ = 0;
  uint64_t clock_ = 0;
  std::vector<std::byte*> free_;
  absl::flat_hash_map<BlockId, Snapshot> published_;
};

}  // namespace textgen::model
