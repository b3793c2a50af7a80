#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace textgen::model {

// Identifies one block of the KV cache (an index into the cache's block table).
using BlockId = int32_t;
// Namespace of cached prefixes: a request only ever finds blocks indexed under its own scope
// (the server gives each principal its own, or one to all with a global cache).
using PrefixScope = uint64_t;

// Tokens per KV block; the index works in whole blocks.
inline constexpr int kKvBlockTokens = 16;

// The scope of a named principal's prefixes: a stable hash of the name, so the same
// principal finds its blocks again after a restart (on disk) or on another replica. Two
// names share a scope only if their 64-bit hashes collide.
PrefixScope ScopeOfPrincipal(std::string_view principal);

// The content identity of a block: a 128-bit hash chained over the scope and every token
// from position 0 through the block's last (XXH3, stable across processes, builds and
// machines), so it names the block on disk and across replicas.
struct BlockKey {
  uint64_t lo = 0;
  uint64_t hi = 0;
  friend bool operator==(const BlockKey&, const BlockKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const BlockKey& k) {
    return H::combine(std::move(h), k.lo, k.hi);
  }
};

// What a block holds, by content: the key of the prefix before it, its tokens, its own key.
struct BlockRecord {
  BlockKey parent;
  BlockKey key;
  std::array<int, kKvBlockTokens> tokens{};
};

// Where a walk along a chain of indexed blocks stands: before the scope's first block, or
// after an indexed block.
struct PrefixCursor {
  PrefixScope scope = 0;
  BlockKey content;     // chained over the scope and every token so far
  uint64_t serial = 0;  // the last block's entry serial; 0 at the root
  int blocks = 0;       // blocks walked from the root
};

// The prefix index of the KV cache: full blocks of K/V keyed by the exact token prefix that
// produced them, so a request that starts with the same tokens reuses them instead of
// computing them again.
//
// Chained block hashes (vLLM's scheme) rather than a radix tree: K/V is stored and shared in
// whole blocks anyway, a lookup is one hash probe per block, and the content hash chain can
// name blocks outside this process too. A hash is only a hint: an entry matches a walk only
// when its tokens are equal and its parent is the walk's last entry (serials are never
// reused), so a hash collision can cost a hit but never serves K/V of a different prefix.
//
// It also keeps the LRU order of the indexed blocks no sequence references (the cache's
// evictable memory). It owns no memory: KvCache tells it when a block becomes referenced or
// unreferenced and asks it which block to evict. Engine thread only.
class PrefixIndex {
 public:
  using BlockTokens = std::span<const int, kKvBlockTokens>;

  // The cursor before the first block of `scope`.
  static PrefixCursor Root(PrefixScope scope);

  // The indexed block continuing `at` with `tokens`, or nullopt.
  std::optional<BlockId> Find(const PrefixCursor& at, BlockTokens tokens) const;
  // The cursor after `block`, which must be indexed.
  PrefixCursor CursorAfter(BlockId block) const;

  // Indexes `block` (full, referenced, not indexed) as the continuation of `at` by
  // `tokens`. Returns the block now indexed there: `block`, or an equal block indexed before
  // (the caller may share that one instead); nullopt when a different entry holds the hash
  // (the chain cannot be indexed further).
  std::optional<BlockId> Insert(BlockId block, const PrefixCursor& at, BlockTokens tokens);
  bool Contains(BlockId block) const {
    return block < static_cast<BlockId>(entries_.size()) && entries_[block].serial != 0;
  }

  // LRU bookkeeping of indexed blocks: `block` lost its last reference (most recently used
  // now) or gained its first one. Both are no-ops for a block that is not indexed.
  void MarkIdle(BlockId block);
  void MarkBusy(BlockId block);
  // Removes the least recently used idle block from the index and returns it with what it
  // held (so it can be kept elsewhere); nullopt when every indexed block is referenced.
  struct Evicted {
    BlockId block;
    BlockRecord record;
  };
  std::optional<Evicted> EvictLeastRecentlyUsed();
  // What an indexed block holds.
  BlockRecord RecordOf(BlockId block) const;
  // Every indexed block, in no particular order.
  std::vector<BlockId> IndexedBlocks() const;

  int indexed_blocks() const { return static_cast<int>(by_key_.size()); }
  int idle_blocks() const { return idle_blocks_; }

 private:
  static constexpr BlockId kNone = -1;
  struct Entry {
    uint64_t serial = 0;  // 0: not indexed
    uint64_t parent_serial = 0;
    PrefixScope scope = 0;
    uint64_t key = 0;         // in by_key_
    BlockKey parent_content;  // PrefixCursor::content before this block
    BlockKey content;         // and after it
    int depth = 0;            // blocks from the root, this one included
    std::array<int, kKvBlockTokens> tokens{};
    BlockId lru_prev = kNone;  // idle list links (kNone at the ends / when busy)
    BlockId lru_next = kNone;
    bool idle = false;
  };
  static uint64_t KeyOf(const PrefixCursor& at, BlockTokens tokens);
  Entry& EntryFor(BlockId block);
  void Unlink(BlockId block);

  std::vector<Entry> entries_;  // [block id]
  absl::flat_hash_map<uint64_t, BlockId> by_key_;
  uint64_t next_serial_ = 1;
  BlockId lru_oldest_ = kNone;
  BlockId lru_newest_ = kNone;
  int idle_blocks_ = 0;
};

// The content key of a block continuing the prefix keyed `parent` with `tokens`.
BlockKey ChainBlockKey(const BlockKey& parent, PrefixIndex::BlockTokens tokens);
// The content key before the first block of `scope`.
BlockKey RootBlockKey(PrefixScope scope);

}  // namespace textgen::model
