#include "model/runtime/recurrent_state_pool.h"

namespace textgen::model {

absl::StatusOr<std::byte*> RecurrentStatePool::Take(ops::HugePageArena& arena) {
  if (!free_.empty()) {
    std::byte* buffer = free_.back();
    free_.pop_back();
    return buffer;
  }
  absl::StatusOr<void*> raw = arena.Allocate(static_cast<size_t>(state_bytes_));
  if (!raw.ok()) return raw.status();
  ++made_;
  return static_cast<std::byte*>(*raw);
}

bool RecurrentStatePool::Publish(BlockId block, std::byte* buffer) {
  return published_.try_emplace(block, Snapshot{.data = buffer, .last_used = ++clock_}).second;
}

const std::byte* RecurrentStatePool::Find(BlockId block) {
  auto it = published_.find(block);
  if (it == published_.end()) return nullptr;
  it->second.last_used = ++clock_;
  return it->second.data;
}

void RecurrentStatePool::Drop(BlockId block) {
  auto it = published_.find(block);
  if (it == published_.end()) return;
  free_.push_back(it->second.data);
  published_.erase(it);
}

bool RecurrentStatePool::EvictLeastRecentlyUsed() {
  // A linear scan: a pool holds at most budget / state size snapshots (tens: a state is MiBs).
  auto oldest = published_.end();
  for (auto it = published_.begin(); it != published_.end(); ++it) {
    if (oldest == published_.end() || it->second.last_used < oldest->second.last_used) {
      oldest = it;
    }
  }
  if (oldest == published_.end()) return false;
  free_.push_back(oldest->second.data);
  published_.erase(oldest);
  ++evicted_;
  return true;
}

}  // namespace textgen::model
