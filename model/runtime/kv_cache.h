#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/kernels/attention.h"
#include "model/kernels/huge_page_arena.h"
#include "model/runtime/kv_disk_tier.h"
#include "model/runtime/prefix_index.h"
#include "model/runtime/recurrent_state_pool.h"

namespace textgen::model {

// Identifies one sequence's K/V storage inside a KvCache.
using SequenceId = int32_t;

// Per-sequence K/V storage for all layers, in blocks of 16 tokens from one pool under a byte
// budget, with a prefix index over full blocks so sequences that start with the same tokens
// share their K/V copy-on-write. Engine thread only (not thread-safe).
//
// Contract used by the scheduler (the block layout is under "Engine API" below):
//   NewSequence(scope)     a new empty sequence (holds no memory yet)
//   AttachPrefix(id, t, m) extends an empty or fully indexed sequence with the longest run of
//                          indexed blocks that continues it along tokens t (at most m tokens)
//   Reserve(id, n)         make room for n tokens in total; RESOURCE_EXHAUSTED past budget
//   Length(id)             tokens whose K/V are stored (Engine::Forward appends)
//   Publish(id, t)         indexes the sequence's full blocks (t: its tokens) for others
//   Truncate(id, n)        keep the first n tokens, return spare blocks (copies a shared tail)
//   Rewind(id, n)          keep the first n tokens and the blocks (drops rejected drafts)
//   Fork(id, n)            a new sequence sharing the first n tokens of id
//   Free(id)               drop the sequence; its indexed blocks stay cached until evicted
//   SpillToDisk()          writes every indexed block to the disk tier (drain)
//
// Memory: a block is referenced (by one or more sequences: counts against the budget), cached
// (indexed, referenced by none: reclaimable, evicted least recently used first when a block
// is needed), or free. So cached data never makes a Reserve fail: only referenced blocks
// count, bytes_in_use() + new blocks <= budget. With a disk tier (AttachDiskTier), a block
// is written to disk when it is published (and, if that failed, when evicted or on drain),
// and AttachPrefix continues a prefix from disk where memory ends, reading blocks back into
// memory under the same budget. Blocks below a
// sequence's length are never written again, so full blocks are shared as they are; the one block a
// sequence still writes into is always its own (Truncate and Fork copy a shared partial block).
//
// Constructible on its own (scheduler tests use it with a fake engine):
//   KvCache(const KvCacheLayout& layout, int64_t budget_bytes);
//   int64_t bytes_in_use() const; int64_t budget_bytes() const;
//   int64_t BytesForTokens(int n) const;   // what n tokens of one sequence cost (block-rounded)
//
// Recurrent state (hybrid models: Gated DeltaNet, ...): with layout.recurrent_state_bytes > 0
// every sequence also owns one fixed-size state (all its recurrent layers' state after its
// last stored token), taken with its first Reserve (or AttachPrefix) under the same budget and
// zeroed. A state describes exactly one position, so such a sequence is cut only to its whole
// length or to nothing: Truncate to fewer tokens empties it (Length() reads 0), Rewind and
// Fork past 0 and short of the whole length fail with FAILED_PRECONDITION.
// Prefixes are shared through snapshots of the state at block boundaries (RecurrentStatePool):
// when Append leaves a sequence on a boundary, the state is copied (room permitting, else
// skipped): kept at every SnapshotIntervalBlocks()-th boundary, otherwise only the latest one
// (the end of a prompt, then of a reply: where a follow-up turn continues). Publish hands a
// sequence's snapshots to the index with its blocks; AttachPrefix continues a sequence only up
// to the deepest matching block that has a snapshot, and copies it into the sequence's state.
// The scheduler ends prefill chunks on the boundaries worth a snapshot (SnapshotStop).
// Speculative decoding (EnableCheckpoints): every sequence also holds a checkpoint buffer, into
// which the engine copies the state before a chunk of drafted tokens (Checkpoint); Rewind past
// rejected drafts then goes back to where that chunk began (Length() reads that), and the
// caller feeds the accepted tokens again.
struct KvCacheLayout {
  int n_layers = 0;  // layers that keep K/V (attention layers)
  int n_kv_heads = 0;
  int head_dim = 0;
  int bytes_per_element = 4;
  int64_t recurrent_state_bytes = 0;  // per sequence; 0 = no recurrent layers
};

// Bytes of one block (kKvBlockTokens tokens' K and V over every layer) in `layout`; at least 1
// so budget arithmetic stays defined for a degenerate layout.
int64_t KvBlockBytes(const KvCacheLayout& layout);

class KvCache {
 public:
  // Tokens per block: memory is taken from the pool, accounted and shared in these units.
  static constexpr int kBlockTokens = kKvBlockTokens;

  KvCache(const KvCacheLayout& layout, int64_t budget_bytes);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // ---- Scheduler API ----

  // A new empty sequence (holds no memory yet) whose blocks are found and indexed under
  // `scope`. Ids are never reused.
  SequenceId NewSequence(PrefixScope scope = 0);
  // Extends `id` with the longest run of indexed blocks that continues it along `tokens`
  // (the sequence's tokens from position 0), up to `max_tokens` tokens in total. Only a
  // sequence whose length is a whole number of blocks, all indexed, can be extended (a fresh
  // one, or one whose every block came from here or was published); otherwise, or with no
  // match, nothing changes. Reserved blocks the match covers are given back. Returns the
  // tokens added.
  int AttachPrefix(SequenceId id, std::span<const int> tokens, int max_tokens);
  // Makes room for `n_tokens` tokens in total (a no-op if already there). NOT_FOUND for an
  // unknown id, INVALID_ARGUMENT for n < 0, RESOURCE_EXHAUSTED (bytes needed / available)
  // past the budget; on failure nothing changes.
  absl::Status Reserve(SequenceId id, int n_tokens);
  // Indexes the sequence's full blocks not indexed yet, so later sequences can share them.
  // `tokens` are the sequence's tokens (at least Length(id) of them). A block equal to one
  // already indexed is replaced by it (the prefix is then held once). Unknown ids are ignored.
  void Publish(SequenceId id, std::span<const int> tokens);
  // Tokens whose K/V are stored; -1 for an unknown id.
  int Length(SequenceId id) const;
  // Whether `id` names a live sequence.
  bool Contains(SequenceId id) const;
  // Forgets the K/V past the first `n_tokens` tokens (0 <= n <= Length) and keeps the
  // sequence's blocks and reserved room: speculative decoding drops the K/V of drafted tokens
  // that were not kept. FAILED_PRECONDITION, with nothing changed, when a block past the
  // first n tokens is shared (those blocks are written again). A recurrent sequence goes back
  // to its checkpoint instead (at most n: read Length()); FAILED_PRECONDITION without one.
  absl::Status Rewind(SequenceId id, int n_tokens);
  // Keeps the first `n_tokens` tokens (0 <= n <= Length) and gives back blocks no longer
  // needed (including reserved but unused ones). A shared block that would be written again
  // is copied first; when the budget has no room for that copy the sequence keeps only the
  // whole blocks before it (read Length() afterwards).
  absl::Status Truncate(SequenceId id, int n_tokens);
  // A new sequence holding the first `n_tokens` tokens (n <= Length(id)) of `id`: its full
  // blocks shared, a partial last block copied.
  absl::StatusOr<SequenceId> Fork(SequenceId id, int n_tokens);
  // Drops the sequence; the id becomes invalid. NOT_FOUND if unknown.
  absl::Status Free(SequenceId id);
  // Bytes that dropping all of `ids` would free for new blocks: their blocks that no other
  // sequence references (whether those would stay cached or not).
  int64_t BytesFreedByDropping(std::span<const SequenceId> ids) const;
  // Keeps evicted blocks on disk and finds prefixes there (see KvDiskTier).
  void AttachDiskTier(std::unique_ptr<KvDiskTier> tier) { disk_ = std::move(tier); }
  const KvDiskTier* disk_tier() const { return disk_.get(); }
  // Recurrent models: keeps published state snapshots on disk too (a tier whose files hold
  // layout.recurrent_state_bytes, under the key of the block a snapshot ends at), so a prefix
  // continues from disk after a restart. Used with AttachDiskTier.
  void AttachSnapshotTier(std::unique_ptr<KvDiskTier> tier) { snapshot_disk_ = std::move(tier); }
  const KvDiskTier* snapshot_tier() const { return snapshot_disk_.get(); }
  // Writes every indexed block the disk tier does not hold yet (a no-op without one);
  // returns how many. For drain: what memory holds survives the process.
  int SpillToDisk();

  // Bytes of blocks referenced by sequences (each shared block once) and of their recurrent
  // states.
  int64_t bytes_in_use() const {
    return blocks_in_use_ * block_bytes_ + buffers_held_ * layout_.recurrent_state_bytes;
  }
  bool has_recurrent_state() const { return layout_.recurrent_state_bytes > 0; }
  // Bytes of indexed blocks no sequence references and of published snapshots (reclaimed on
  // demand).
  int64_t bytes_cached() const {
    return int64_t{index_.idle_blocks()} * block_bytes_ +
           states_.published() * layout_.recurrent_state_bytes;
  }
  // Recurrent models: a snapshot is kept at every this-many-th block boundary, so snapshots
  // cost at most about what the K/V blocks they cover cost (state bytes / block bytes, at
  // least 1); 0 without recurrent layers.
  int SnapshotIntervalBlocks() const { return snapshot_interval_blocks_; }
  // Where a prefill chunk of a sequence at `position`, whose prompt is `prompt_tokens` long,
  // should end at the latest so that a snapshot worth keeping is taken: the next interval
  // boundary or the prompt's last block boundary after `position`, else the prompt's end.
  // Without recurrent layers, the prompt's end.
  int SnapshotStop(int position, int prompt_tokens) const;
  // The same for sequence `id` prefilling `prompt`, stopping also where the run of indexed
  // blocks that continues its prompt ends: the end of a prefix other sequences share (a system
  // prompt), worth a snapshot for the next ones that share it.
  int SnapshotStop(SequenceId id, std::span<const int> prompt) const;
  // Published snapshots and those evicted so far.
  int64_t snapshots() const { return states_.published(); }
  int64_t evicted_snapshots() const { return states_.evicted(); }
  int64_t budget_bytes() const { return budget_bytes_; }
  // What `n` tokens of one sequence cost (rounded up to whole blocks).
  int64_t BytesForTokens(int n) const;
  // Number of live sequences.
  int num_sequences() const { return static_cast<int>(sequences_.size()); }
  const KvCacheLayout& layout() const { return layout_; }
  // Prefix index figures: blocks indexed, blocks referenced by more than one sequence,
  // cached blocks evicted so far.
  int indexed_blocks() const { return index_.indexed_blocks(); }
  int shared_blocks() const { return shared_blocks_; }
  int64_t evicted_blocks() const { return evicted_blocks_; }

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
  // Valid until the next call that changes the sequence's blocks.
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
  // The sequence's recurrent state (layout.recurrent_state_bytes, after its Length() tokens),
  // taken by its first Reserve; null without one or for an unknown id.
  std::byte* RecurrentState(SequenceId id) const;
  // Recurrent models with speculative decoding: from now on each sequence's first Reserve
  // also takes a checkpoint buffer (counted like its state). No-op without recurrent layers.
  void EnableCheckpoints() { checkpoints_ = has_recurrent_state(); }
  // Copies the sequence's state into its checkpoint (before a chunk of drafted tokens), so a
  // Rewind past them can go back to Length() as it is now. No-op without a checkpoint buffer.
  void Checkpoint(SequenceId id);
  // Where layer `layer`'s K and V sit in every block, for the attention kernels.
  ops::PagedKvLayout LayerLayout(int layer) const;

 private:
  struct Block {
    std::byte* data = nullptr;
    int refs = 0;  // sequences holding it
  };
  struct Sequence {
    int length = 0;
    std::vector<BlockId> blocks;   // [ceil(capacity / kBlockTokens)]
    std::vector<std::byte*> data;  // [blocks.size()] their memory, the engine's block table
    PrefixScope scope = 0;
    std::byte* state = nullptr;  // recurrent state (layout.recurrent_state_bytes), or null
    // Snapshots taken and not published yet: of the state after block `block`; `kept` at an
    // interval boundary, else the sequence's latest (replaced by the next).
    struct Pending {
      int block = 0;
      std::byte* data = nullptr;
      bool kept = false;
    };
    std::vector<Pending> pending;
    std::byte* checkpoint = nullptr;  // with EnableCheckpoints: the state at checkpoint_length
    int checkpoint_length = -1;       // -1: nothing saved
    int indexed = 0;                  // leading blocks known to the index (cursor is after them)
    bool indexable = true;            // false once a hash collision stopped the chain
    PrefixCursor cursor;
  };
  // A block for new K/V: free, newly made, or the least recently used cached one. The
  // caller has checked the budget. The block comes referenced once.
  absl::StatusOr<BlockId> TakeBlock();
  void AddRef(BlockId block);
  void DropRef(BlockId block);
  // Replaces block `b` of `seq` by `block` (already referenced for it).
  void SetBlock(Sequence& seq, size_t b, BlockId block);
  // Gives back the blocks of `seq` past its first `keep`.
  void DropBlocksFrom(Sequence& seq, size_t keep);
  std::span<std::byte> BlockBytes(BlockId block) const {
    return {blocks_[block].data, static_cast<size_t>(block_bytes_)};
  }
  // AttachPrefix's second half: blocks read back from the disk tier.
  int AttachFromDisk(Sequence& seq, std::span<const int> tokens, int limit);
  // Rewinds the sequence's index cursor to its first `blocks` blocks.
  void RewindIndex(Sequence& seq, int blocks);
  bool Shared(BlockId block) const { return blocks_[block].refs > 1 || index_.Contains(block); }
  int64_t budget_blocks() const { return budget_bytes_ / block_bytes_; }
  // Whether `blocks` more blocks and `buffers` more state buffers fit the budget beside what
  // sequences hold.
  bool Fits(int64_t blocks, int64_t buffers) const {
    return (blocks_in_use_ + blocks) * block_bytes_ +
               (buffers_held_ + buffers) * layout_.recurrent_state_bytes <=
           budget_bytes_;
  }
  // A state buffer for a sequence (the caller has checked the budget): a free one, else a
  // published snapshot's when the memory made is at the budget, else a new one.
  absl::StatusOr<std::byte*> TakeBuffer();
  void GiveBuffer(std::byte* buffer);
  // A zeroed recurrent state for `seq` (the caller has checked the budget).
  absl::Status TakeState(Sequence& seq);
  void DropState(Sequence& seq);
  // Append's half for recurrent models: a snapshot when `seq` ends on a block boundary.
  void TakeSnapshot(Sequence& seq);
  // Drops `seq`'s unpublished snapshots past its first `blocks` blocks.
  void DropPending(Sequence& seq, int blocks);
  // Publish's half for recurrent models: hands the pending snapshots of indexed blocks over.
  void PublishSnapshots(Sequence& seq);
  // AttachPrefix for recurrent models: up to the deepest block with a snapshot.
  int AttachRecurrentPrefix(Sequence& seq, std::span<const int> tokens, int limit);
  // Its disk half: the blocks that continue `cursor` along `tokens` from block `b`, read into
  // the index (cached), appended to `matched`.
  void FindOnDisk(PrefixCursor cursor, int b, std::span<const int> tokens, int limit,
                  std::vector<BlockId>& matched);
  // The snapshot after `block` read back from the snapshot tier into the pool; false on a miss.
  bool LoadSnapshot(BlockId block);
  // The sequence to cut to `n_tokens`: NOT_FOUND, or INVALID_ARGUMENT outside [0, Length]
  // naming `operation`.
  absl::StatusOr<Sequence*> FindToShorten(SequenceId id, int n_tokens, const char* operation);
  Sequence* Find(SequenceId id);
  const Sequence* Find(SequenceId id) const;
  absl::Status ExhaustedError(SequenceId id, int n_tokens, int64_t new_blocks,
                              int64_t new_states = 0) const;

  KvCacheLayout layout_;
  int64_t budget_bytes_;
  int64_t block_bytes_;        // kBlockTokens * n_layers * 2 * kv_dim * bytes_per_element
  int64_t blocks_in_use_ = 0;  // blocks with refs > 0
  int64_t buffers_held_ = 0;   // recurrent states and unpublished snapshots of sequences
  int snapshot_interval_blocks_ = 0;
  bool checkpoints_ = false;
  int shared_blocks_ = 0;       // blocks with refs > 1
  int64_t evicted_blocks_ = 0;  // cached blocks reclaimed for new K/V
  SequenceId next_id_ = 0;
  absl::flat_hash_map<SequenceId, Sequence> sequences_;
  ops::HugePageArena memory_;  // every block ever made lives here
  std::vector<Block> blocks_;  // [block id] every block ever made
  std::vector<BlockId> free_;  // made, neither referenced nor indexed
  RecurrentStatePool states_;  // recurrent states and snapshots (hybrid models)
  PrefixIndex index_;
  std::unique_ptr<KvDiskTier> disk_;           // may be null
  std::unique_ptr<KvDiskTier> snapshot_disk_;  // may be null (recurrent models)
};

}  // namespace textgen::model
