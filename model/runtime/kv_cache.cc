#include "model/runtime/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace textgen::model {

// Blocks are allocated lazily (an untouched budget costs no memory) from huge-page-backed
// memory (attention reads each head's slab of a block, one 4 KiB page each with small pages)
// and recycled through a free list, so steady-state decoding does not allocate. A block
// never exceeds the budget: at most budget_bytes / block_bytes blocks are ever handed out.

KvCache::KvCache(const KvCacheLayout& layout, int64_t budget_bytes)
    : layout_(layout),
      budget_bytes_(std::max<int64_t>(budget_bytes, 0)),
      block_bytes_(int64_t{kBlockTokens} * std::max(layout.n_layers, 0) * 2 *
                   std::max(layout.n_kv_heads, 0) * std::max(layout.head_dim, 0) *
                   std::max(layout.bytes_per_element, 0)) {
  if (block_bytes_ <= 0) block_bytes_ = 1;  // degenerate layout: keep arithmetic defined
}

KvCache::~KvCache() = default;

SequenceId KvCache::NewSequence() {
  const SequenceId id = next_id_++;
  sequences_.emplace(id, Sequence{});
  return id;
}

KvCache::Sequence* KvCache::Find(SequenceId id) {
  auto it = sequences_.find(id);
  return it == sequences_.end() ? nullptr : &it->second;
}

const KvCache::Sequence* KvCache::Find(SequenceId id) const {
  auto it = sequences_.find(id);
  return it == sequences_.end() ? nullptr : &it->second;
}

int64_t KvCache::BytesForTokens(int n) const {
  if (n <= 0) return 0;
  return (static_cast<int64_t>(n) + kBlockTokens - 1) / kBlockTokens * block_bytes_;
}

absl::StatusOr<std::byte*> KvCache::TakeBlock() {
  if (!free_blocks_.empty()) {
    std::byte* block = free_blocks_.back();
    free_blocks_.pop_back();
    ++blocks_in_use_;
    return block;
  }
  absl::StatusOr<void*> raw = memory_.Allocate(static_cast<size_t>(block_bytes_));
  if (!raw.ok()) return raw.status();
  ++blocks_in_use_;
  return static_cast<std::byte*>(*raw);
}

void KvCache::ReturnBlock(std::byte* block) {
  --blocks_in_use_;
  free_blocks_.push_back(block);
}

absl::Status KvCache::ExhaustedError(SequenceId id, int n_tokens, int64_t new_blocks) const {
  return absl::ResourceExhaustedError(
      absl::StrCat("KV cache budget exceeded: sequence ", id, " needs ", new_blocks * block_bytes_,
                   " more bytes for ", n_tokens, " tokens, ", budget_bytes_ - bytes_in_use(),
                   " of ", budget_bytes_, " bytes available"));
}

absl::Status KvCache::Reserve(SequenceId id, int n_tokens) {
  Sequence* seq = Find(id);
  if (seq == nullptr) return absl::NotFoundError(absl::StrCat("unknown KV sequence id ", id));
  if (n_tokens < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Reserve: n_tokens must be >= 0, got ", n_tokens));
  }
  const int64_t want_blocks = (static_cast<int64_t>(n_tokens) + kBlockTokens - 1) / kBlockTokens;
  const int64_t have_blocks = static_cast<int64_t>(seq->blocks.size());
  if (want_blocks <= have_blocks) return absl::OkStatus();
  const int64_t new_blocks = want_blocks - have_blocks;
  if (bytes_in_use() + new_blocks * block_bytes_ > budget_bytes_) {
    return ExhaustedError(id, n_tokens, new_blocks);
  }
  for (int64_t i = 0; i < new_blocks; ++i) {
    absl::StatusOr<std::byte*> block = TakeBlock();
    if (!block.ok()) return block.status();  // blocks taken so far stay with the sequence
    seq->blocks.push_back(*block);
  }
  return absl::OkStatus();
}

int KvCache::Length(SequenceId id) const {
  const Sequence* seq = Find(id);
  return seq == nullptr ? -1 : seq->length;
}

bool KvCache::Contains(SequenceId id) const { return Find(id) != nullptr; }

int KvCache::Capacity(SequenceId id) const {
  const Sequence* seq = Find(id);
  return seq == nullptr ? -1 : static_cast<int>(seq->blocks.size()) * kBlockTokens;
}

absl::Status KvCache::Truncate(SequenceId id, int n_tokens) {
  Sequence* seq = Find(id);
  if (seq == nullptr) return absl::NotFoundError(absl::StrCat("unknown KV sequence id ", id));
  if (n_tokens < 0 || n_tokens > seq->length) {
    return absl::InvalidArgumentError(
        absl::StrCat("Truncate: n_tokens must be in [0, ", seq->length, "], got ", n_tokens));
  }
  seq->length = n_tokens;
  const size_t keep = (static_cast<size_t>(n_tokens) + kBlockTokens - 1) / kBlockTokens;
  while (seq->blocks.size() > keep) {
    ReturnBlock(seq->blocks.back());
    seq->blocks.pop_back();
  }
  return absl::OkStatus();
}

absl::StatusOr<SequenceId> KvCache::Fork(SequenceId id, int n_tokens) {
  const Sequence* src = Find(id);
  if (src == nullptr) return absl::NotFoundError(absl::StrCat("unknown KV sequence id ", id));
  if (n_tokens < 0 || n_tokens > src->length) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fork: n_tokens must be in [0, ", src->length, "], got ", n_tokens));
  }
  const int64_t n_blocks = (static_cast<int64_t>(n_tokens) + kBlockTokens - 1) / kBlockTokens;
  if (bytes_in_use() + n_blocks * block_bytes_ > budget_bytes_) {
    return ExhaustedError(id, n_tokens, n_blocks);
  }
  const SequenceId fork_id = NewSequence();  // may rehash: look `src` up again below
  Sequence& dst = sequences_[fork_id];
  const Sequence& from = sequences_[id];
  dst.blocks.reserve(n_blocks);
  for (int64_t b = 0; b < n_blocks; ++b) {
    absl::StatusOr<std::byte*> block = TakeBlock();
    if (!block.ok()) {
      Free(fork_id).IgnoreError();  // exists: created above
      return block.status();
    }
    dst.blocks.push_back(*block);
    // Whole blocks are copied; slots past n_tokens are never read before being rewritten.
    std::memcpy(dst.blocks.back(), from.blocks[b], block_bytes_);
  }
  dst.length = n_tokens;
  return fork_id;
}

absl::Status KvCache::Free(SequenceId id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown KV sequence id ", id));
  }
  for (std::byte* block : it->second.blocks) ReturnBlock(block);
  sequences_.erase(it);
  return absl::OkStatus();
}

absl::Status KvCache::Append(SequenceId id, int n) {
  Sequence* seq = Find(id);
  if (seq == nullptr) return absl::NotFoundError(absl::StrCat("unknown KV sequence id ", id));
  const int64_t capacity = static_cast<int64_t>(seq->blocks.size()) * kBlockTokens;
  if (n < 0 || seq->length + n > capacity) {
    return absl::InternalError(absl::StrCat("Append: sequence ", id, " length ", seq->length, " + ",
                                            n, " exceeds reserved capacity ", capacity));
  }
  seq->length += n;
  return absl::OkStatus();
}

std::byte* const* KvCache::BlockTable(SequenceId id) const {
  const Sequence* seq = Find(id);
  return seq == nullptr ? nullptr : seq->blocks.data();
}

}  // namespace textgen::model
