#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/kernels/huge_page_arena.h"

namespace textgen::model {

// Identifies one sequence's K/V storage inside a KvCache.
using SequenceId = int32_t;

// Per-sequence K/V storage for all layers, grown in blocks from one pool under a byte
// budget. Engine thread only (not thread-safe).
//
// Contract used by the scheduler (the block layout is under "Engine API" below):
//   NewSequence()          a new empty sequence (holds no memory yet)
//   Reserve(id, n)         make room for n tokens in total; RESOURCE_EXHAUSTED past budget
//   Length(id)             tokens whose K/V are stored (Engine::Forward appends)
//   Truncate(id, n)        keep the first n tokens (n <= Length), return spare blocks
//   Fork(id, n)            a new sequence holding a copy of the first n tokens of id
//   Free(id)               give all memory back; id becomes invalid
//
// Constructible on its own (scheduler tests use it with a fake engine):
//   struct KvCacheLayout { int n_layers; int n_kv_heads; int head_dim; int bytes_per_element; };
//   KvCache(const KvCacheLayout& layout, int64_t budget_bytes);
//   int64_t bytes_in_use() const; int64_t budget_bytes() const;
//   int64_t BytesForTokens(int n) const;   // what n tokens of one sequence cost (block-rounded)
struct KvCacheLayout {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int bytes_per_element = 4;
};

class KvCache {
 public:
  // Tokens per block: memory is taken from the pool and accounted in these units.
  static constexpr int kBlockTokens = 16;

  KvCache(const KvCacheLayout& layout, int64_t budget_bytes);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // ---- Scheduler API ----

  // A new empty sequence (holds no memory yet). Ids are never reused.
  SequenceId NewSequence();
  // Makes room for `n_tokens` tokens in total (a no-op if already there). NOT_FOUND for an
  // unknown id, INVALID_ARGUMENT for n < 0, RESOURCE_EXHAUSTED (bytes needed / available)
  // past the budget; on failure nothing changes.
  absl::Status Reserve(SequenceId id, int n_tokens);
  // Tokens whose K/V are stored; -1 for an unknown id.
  int Length(SequenceId id) const;
  // Whether `id` names a live sequence.
  bool Contains(SequenceId id) const;
  // Keeps the first `n_tokens` tokens (0 <= n <= Length) and returns blocks no longer needed
  // (including reserved but unused ones).
  absl::Status Truncate(SequenceId id, int n_tokens);
  // A new sequence holding a copy of the first `n_tokens` tokens (n <= Length(id)) of `id`.
  absl::StatusOr<SequenceId> Fork(SequenceId id, int n_tokens);
  // Gives all memory of `id` back to the pool; the id becomes invalid. NOT_FOUND if unknown.
  absl::Status Free(SequenceId id);

  // Bytes of blocks held by sequences.
  int64_t bytes_in_use() const { return blocks_in_use_ * block_bytes_; }
  int64_t budget_bytes() const { return budget_bytes_; }
  // What `n` tokens of one sequence cost (rounded up to whole blocks).
  int64_t BytesForTokens(int n) const;
  // Number of live sequences.
  int num_sequences() const { return static_cast<int>(sequences_.size()); }
  const KvCacheLayout& layout() const { return layout_; }

  // ---- Engine API ----
  //
  // A block holds kBlockTokens tokens of every layer, as one region of kBlockTokens * head_dim
  // elements per (layer, K or V, kv head):
  //   [n_layers][2 (K, V)][n_kv_heads][kBlockTokens * head_dim]
  // Inside a region V is token-major ([kBlockTokens][head_dim]) and K is dimension-major
  // ([head_dim][kBlockTokens]), so attention scores a block's 16 keys with vector FMAs
  // (ops::PagedKvLayout; the attention kernels write and read both).

  // Tokens the sequence has room for (reserved blocks * kBlockTokens); -1 if unknown.
  int Capacity(SequenceId id) const;
  // Marks `n` more tokens as stored (their K/V must have been written). Needs capacity.
  absl::Status Append(SequenceId id, int n);
  // Block table of a sequence: block b holds positions [b*16, b*16+16). Null if unknown.
  // Valid until the next Reserve/Truncate/Fork/Free.
  std::byte* const* BlockTable(SequenceId id) const;
  // Element offset inside a block of the region (layer, kind 0=K/1=V, kv head), plus `slot`
  // rows of head_dim: the token's row for V (token-major); for K pass slot 0 (its region is
  // dimension-major).
  int64_t ElementOffset(int layer, int kind, int head, int slot) const {
    return ((static_cast<int64_t>(layer) * 2 + kind) * layout_.n_kv_heads + head) * kBlockTokens *
               layout_.head_dim +
           static_cast<int64_t>(slot) * layout_.head_dim;
  }
  int64_t block_bytes() const { return block_bytes_; }

 private:
  struct Sequence {
    int length = 0;
    std::vector<std::byte*> blocks;  // [ceil(capacity / kBlockTokens)]
  };
  // Takes a block from the free list or allocates one (budget already checked).
  absl::StatusOr<std::byte*> TakeBlock();
  void ReturnBlock(std::byte* block);
  Sequence* Find(SequenceId id);
  const Sequence* Find(SequenceId id) const;
  absl::Status ExhaustedError(SequenceId id, int n_tokens, int64_t new_blocks) const;

  KvCacheLayout layout_;
  int64_t budget_bytes_;
  int64_t block_bytes_;  // kBlockTokens * n_layers * 2 * kv_dim * bytes_per_element
  int64_t blocks_in_use_ = 0;
  SequenceId next_id_ = 0;
  absl::flat_hash_map<SequenceId, Sequence> sequences_;
  ops::HugePageArena memory_;            // every block ever made lives here
  std::vector<std::byte*> free_blocks_;  // made, not in use
};

}  // namespace textgen::model
