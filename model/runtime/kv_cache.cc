#include "model/runtime/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"

namespace textgen::model {

// Blocks are allocated lazily (an untouched budget costs no memory) from huge-page-backed
// memory (attention reads each head's slab of a block, one 4 KiB page each with small pages)
// and recycled, so steady-state decoding does not allocate. At most budget_bytes /
// block_bytes blocks are ever made; cached blocks are part of that, so the budget bounds
// referenced and cached memory together.

namespace {

// The disk record of the block holding `tokens` after the prefix `at` ends.
BlockRecord RecordAfter(const PrefixCursor& at, PrefixIndex::BlockTokens tokens) {
  BlockRecord record{.parent = at.content, .key = ChainBlockKey(at.content, tokens)};
  std::copy(tokens.begin(), tokens.end(), record.tokens.begin());
  return record;
}

}  // namespace

int64_t KvBlockBytes(const KvCacheLayout& layout) {
  const int64_t bytes = int64_t{kKvBlockTokens} * std::max(layout.n_layers, 0) * 2 *
                        std::max(layout.n_kv_heads, 0) * std::max(layout.head_dim, 0) *
                        std::max(layout.bytes_per_element, 0);
  return std::max<int64_t>(bytes, 1);
}

KvCache::KvCache(const KvCacheLayout& layout, int64_t budget_bytes)
    : layout_(layout),
      budget_bytes_(std::max<int64_t>(budget_bytes, 0)),
      block_bytes_(KvBlockBytes(layout)),
      states_(std::max<int64_t>(layout.recurrent_state_bytes, 0)) {
  if (has_recurrent_state()) {
    snapshot_interval_blocks_ = static_cast<int>(
        std::max<int64_t>(1, (layout.recurrent_state_bytes + block_bytes_ - 1) / block_bytes_));
  }
}

KvCache::~KvCache() = default;

SequenceId KvCache::NewSequence(PrefixScope scope) {
  const SequenceId id = next_id_++;
  Sequence seq;
  seq.scope = scope;
  seq.cursor = PrefixIndex::Root(scope);
  sequences_.emplace(id, std::move(seq));
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
  return (static_cast<int64_t>(n) + kBlockTokens - 1) / kBlockTokens * block_bytes_ +
         layout_.recurrent_state_bytes * (checkpoints_ ? 2 : 1);
}

// State buffers are made lazily and recycled like blocks. What sequences hold stays within the
// budget (Fits); published snapshots are reclaimed once the memory made reaches it. The memory
// made can exceed the budget only by blocks left free while buffers were needed (or the other
// way round), which hybrid models' small K/V keeps small.
absl::StatusOr<std::byte*> KvCache::TakeBuffer() {
  const int64_t made = static_cast<int64_t>(blocks_.size()) * block_bytes_ +
                       states_.made() * layout_.recurrent_state_bytes;
  if (!states_.HasFree() && made + layout_.recurrent_state_bytes > budget_bytes_) {
    states_.EvictLeastRecentlyUsed();
  }
  TEXTGEN_ASSIGN_OR_RETURN(std::byte* const buffer, states_.Take(memory_));
  ++buffers_held_;
  return buffer;
}

void KvCache::GiveBuffer(std::byte* buffer) {
  states_.Give(buffer);
  --buffers_held_;
}

absl::Status KvCache::TakeState(Sequence& seq) {
  TEXTGEN_ASSIGN_OR_RETURN(seq.state, TakeBuffer());
  std::memset(seq.state, 0, static_cast<size_t>(layout_.recurrent_state_bytes));
  return absl::OkStatus();
}

void KvCache::DropState(Sequence& seq) {
  DropPending(seq, 0);
  if (seq.checkpoint != nullptr) {
    GiveBuffer(seq.checkpoint);
    seq.checkpoint = nullptr;
    seq.checkpoint_length = -1;
  }
  if (seq.state == nullptr) return;
  GiveBuffer(seq.state);
  seq.state = nullptr;
}

void KvCache::Checkpoint(SequenceId id) {
  Sequence* seq = Find(id);
  if (seq == nullptr || seq->checkpoint == nullptr || seq->state == nullptr) return;
  std::memcpy(seq->checkpoint, seq->state, static_cast<size_t>(layout_.recurrent_state_bytes));
  seq->checkpoint_length = seq->length;
}

void KvCache::DropPending(Sequence& seq, int blocks) {
  std::erase_if(seq.pending, [&](const Sequence::Pending& p) {
    if (p.block < blocks) return false;
    GiveBuffer(p.data);
    return true;
  });
}

void KvCache::TakeSnapshot(Sequence& seq) {
  if (seq.state == nullptr || seq.length == 0 || seq.length % kBlockTokens != 0) return;
  const int block = seq.length / kBlockTokens - 1;
  const bool kept = (block + 1) % snapshot_interval_blocks_ == 0;
  // The latest unkept snapshot gives way to this one (its buffer is reused).
  auto latest = std::find_if(seq.pending.begin(), seq.pending.end(),
                             [](const Sequence::Pending& p) { return !p.kept; });
  std::byte* data = nullptr;
  if (latest != seq.pending.end()) {
    data = latest->data;
    seq.pending.erase(latest);
  } else {
    if (!Fits(0, 1)) return;  // optional: no room, no snapshot
    absl::StatusOr<std::byte*> taken = TakeBuffer();
    if (!taken.ok()) return;
    data = *taken;
  }
  std::memcpy(data, seq.state, static_cast<size_t>(layout_.recurrent_state_bytes));
  seq.pending.push_back({.block = block, .data = data, .kept = kept});
}

void KvCache::PublishSnapshots(Sequence& seq) {
  std::erase_if(seq.pending, [&](const Sequence::Pending& p) {
    if (p.block >= seq.indexed) return false;  // its block is not indexed yet
    // Computed twice, or the block is not indexed (a hash collision stopped the chain): the
    // index keeps one copy, or none.
    const BlockId block = seq.blocks[p.block];
    if (!index_.Contains(block) || !states_.Publish(block, p.data)) {
      states_.Give(p.data);
    } else if (snapshot_disk_ != nullptr) {
      snapshot_disk_->Store(index_.RecordOf(block),
                            {p.data, static_cast<size_t>(layout_.recurrent_state_bytes)});
    }
    --buffers_held_;
    return true;
  });
}

int KvCache::SnapshotStop(int position, int prompt_tokens) const {
  if (!has_recurrent_state() || position >= prompt_tokens) return prompt_tokens;
  const int interval = snapshot_interval_blocks_ * kBlockTokens;
  const int next_interval = (position / interval + 1) * interval;
  const int last_boundary = prompt_tokens / kBlockTokens * kBlockTokens;
  int stop = prompt_tokens;
  if (next_interval < stop) stop = next_interval;
  if (last_boundary > position && last_boundary < stop) stop = last_boundary;
  return stop;
}

int KvCache::SnapshotStop(SequenceId id, std::span<const int> prompt) const {
  const Sequence* seq = Find(id);
  const int prompt_tokens = static_cast<int>(prompt.size());
  if (seq == nullptr) return prompt_tokens;
  int stop = SnapshotStop(seq->length, prompt_tokens);
  if (!has_recurrent_state() || !seq->indexable) return stop;
  PrefixCursor cursor = seq->cursor;
  int b = seq->indexed;
  for (; (b + 1) * kBlockTokens <= prompt_tokens; ++b) {
    std::optional<BlockId> found = index_.Find(
        cursor, prompt.subspan(static_cast<size_t>(b) * kBlockTokens).first<kBlockTokens>());
    if (!found.has_value()) break;
    cursor = index_.CursorAfter(*found);
  }
  const int run_end = b * kBlockTokens;
  if (run_end > seq->length && run_end < stop) stop = run_end;
  return stop;
}

int KvCache::AttachRecurrentPrefix(Sequence& seq, std::span<const int> tokens, int limit) {
  // The matching blocks, in memory then on disk, each referenced while this runs (so taking
  // blocks and buffers below cannot evict them).
  PrefixCursor cursor = seq.cursor;
  std::vector<BlockId> matched;
  for (int b = seq.indexed; (b + 1) * kBlockTokens <= limit; ++b) {
    std::optional<BlockId> found = index_.Find(
        cursor, tokens.subspan(static_cast<size_t>(b) * kBlockTokens).first<kBlockTokens>());
    if (!found.has_value()) break;
    AddRef(*found);
    matched.push_back(*found);
    cursor = index_.CursorAfter(*found);
  }
  const auto deepest_snapshot = [&]() {
    for (size_t i = matched.size(); i > 0; --i) {
      if (states_.Has(matched[i - 1])) return static_cast<int>(i);
    }
    return 0;
  };
  if (disk_ != nullptr && snapshot_disk_ != nullptr) {
    const int in_memory = deepest_snapshot();
    FindOnDisk(cursor, seq.indexed + static_cast<int>(matched.size()), tokens, limit, matched);
    // The deepest snapshot on disk past the one in memory.
    for (size_t i = matched.size(); i > static_cast<size_t>(in_memory); --i) {
      if (states_.Has(matched[i - 1]) || LoadSnapshot(matched[i - 1])) break;
    }
  }
  // A state to copy into (taking it may reclaim a snapshot: look for the deepest after).
  if (seq.state == nullptr && deepest_snapshot() > 0 && Fits(0, 1)) TakeState(seq).IgnoreError();
  const int with_snapshot = seq.state != nullptr ? deepest_snapshot() : 0;
  for (size_t i = static_cast<size_t>(with_snapshot); i < matched.size(); ++i) DropRef(matched[i]);
  if (with_snapshot == 0) return 0;
  std::memcpy(seq.state, states_.Find(matched[with_snapshot - 1]),
              static_cast<size_t>(layout_.recurrent_state_bytes));
  DropPending(seq, 0);                       // older than the state now
  for (int i = 0; i < with_snapshot; ++i) {  // already referenced above
    const size_t b = static_cast<size_t>(seq.indexed);
    if (b < seq.blocks.size()) {
      SetBlock(seq, b, matched[i]);  // a reserved, still empty block: given back
    } else {
      seq.blocks.push_back(matched[i]);
      seq.data.push_back(blocks_[matched[i]].data);
    }
    seq.cursor = index_.CursorAfter(matched[i]);
    ++seq.indexed;
  }
  const int added = seq.indexed * kBlockTokens - seq.length;
  seq.length = seq.indexed * kBlockTokens;
  return added;
}

std::byte* KvCache::RecurrentState(SequenceId id) const {
  const Sequence* seq = Find(id);
  return seq == nullptr ? nullptr : seq->state;
}

void KvCache::AddRef(BlockId block) {
  int& refs = blocks_[block].refs;
  if (refs == 0) {
    ++blocks_in_use_;
    index_.MarkBusy(block);
  } else if (refs == 1) {
    ++shared_blocks_;
  }
  ++refs;
}

void KvCache::DropRef(BlockId block) {
  int& refs = blocks_[block].refs;
  --refs;
  if (refs == 1) {
    --shared_blocks_;
  } else if (refs == 0) {
    --blocks_in_use_;
    if (index_.Contains(block)) {
      index_.MarkIdle(block);
    } else {
      free_.push_back(block);
    }
  }
}

absl::StatusOr<BlockId> KvCache::TakeBlock() {
  BlockId block = -1;
  if (!free_.empty()) {
    block = free_.back();
    free_.pop_back();
  } else if (static_cast<int64_t>(blocks_.size()) < budget_blocks()) {
    absl::StatusOr<void*> raw = memory_.Allocate(static_cast<size_t>(block_bytes_));
    if (!raw.ok()) return raw.status();
    block = static_cast<BlockId>(blocks_.size());
    blocks_.push_back(Block{.data = static_cast<std::byte*>(*raw), .refs = 0});
  } else if (std::optional<PrefixIndex::Evicted> evicted = index_.EvictLeastRecentlyUsed()) {
    block = evicted->block;
    ++evicted_blocks_;
    states_.Drop(block);  // its snapshot continued a prefix that is gone
    if (disk_ != nullptr) disk_->Store(evicted->record, BlockBytes(block));
  } else {
    return absl::InternalError("KV cache: no block to take although the budget has room");
  }
  AddRef(block);
  return block;
}

void KvCache::SetBlock(Sequence& seq, size_t b, BlockId block) {
  const BlockId old = seq.blocks[b];
  seq.blocks[b] = block;
  seq.data[b] = blocks_[block].data;
  DropRef(old);
}

void KvCache::DropBlocksFrom(Sequence& seq, size_t keep) {
  // Last block first: the LRU order then evicts a prefix's tail before its head.
  while (seq.blocks.size() > keep) {
    DropRef(seq.blocks.back());
    seq.blocks.pop_back();
    seq.data.pop_back();
  }
}

void KvCache::RewindIndex(Sequence& seq, int blocks) {
  seq.indexed = blocks;
  seq.indexable = true;
  seq.cursor =
      blocks == 0 ? PrefixIndex::Root(seq.scope) : index_.CursorAfter(seq.blocks[blocks - 1]);
}

absl::Status KvCache::ExhaustedError(SequenceId id, int n_tokens, int64_t new_blocks,
                                     int64_t new_states) const {
  return absl::ResourceExhaustedError(
      absl::StrCat("KV cache budget exceeded: sequence ", id, " needs ",
                   new_blocks * block_bytes_ + new_states * layout_.recurrent_state_bytes,
                   " more bytes for ", n_tokens, " tokens, ", budget_bytes_ - bytes_in_use(),
                   " of ", budget_bytes_, " bytes available"));
}

int KvCache::AttachPrefix(SequenceId id, std::span<const int> tokens, int max_tokens) {
  Sequence* seq = Find(id);
  if (seq == nullptr || !seq->indexable || seq->length != seq->indexed * kBlockTokens) return 0;
  const int limit = std::min(max_tokens, static_cast<int>(tokens.size()));
  if (has_recurrent_state()) return AttachRecurrentPrefix(*seq, tokens, limit);
  int added = 0;
  while ((seq->indexed + 1) * kBlockTokens <= limit) {
    const size_t b = static_cast<size_t>(seq->indexed);
    std::optional<BlockId> found =
        index_.Find(seq->cursor, tokens.subspan(b * kBlockTokens).first<kBlockTokens>());
    if (!found.has_value()) break;
    AddRef(*found);
    if (b < seq->blocks.size()) {
      SetBlock(*seq, b, *found);  // a reserved, still empty block: given back
    } else {
      seq->blocks.push_back(*found);
      seq->data.push_back(blocks_[*found].data);
    }
    seq->cursor = index_.CursorAfter(*found);
    ++seq->indexed;
    seq->length += kBlockTokens;
    added += kBlockTokens;
  }
  if (disk_ != nullptr) added += AttachFromDisk(*seq, tokens, limit);
  return added;
}

int KvCache::AttachFromDisk(Sequence& seq, std::span<const int> tokens, int limit) {
  int added = 0;
  while ((seq.indexed + 1) * kBlockTokens <= limit) {
    const size_t b = static_cast<size_t>(seq.indexed);
    const PrefixIndex::BlockTokens block_tokens =
        tokens.subspan(b * kBlockTokens).first<kBlockTokens>();
    const BlockRecord want = RecordAfter(seq.cursor, block_tokens);
    // Into the sequence's own reserved (empty) block where it has one, else a new one, taken
    // only once the file is found: a miss must not evict a cached block.
    const bool reserved = b < seq.blocks.size();
    BlockId block = reserved ? seq.blocks[b] : -1;
    if (reserved && (blocks_[block].refs != 1 || index_.Contains(block))) break;
    const bool loaded = disk_->Load(want, [&]() -> std::span<std::byte> {
      if (!reserved) {
        // TakeBlock may evict, and so write, a cached block: Store is safe inside Load (it
        // shares no state with the read in progress).
        if (!Fits(1, 0)) return {};
        absl::StatusOr<BlockId> taken = TakeBlock();
        if (!taken.ok()) return {};
        block = *taken;
      }
      return BlockBytes(block);
    });
    const std::optional<BlockId> indexed =
        loaded ? index_.Insert(block, seq.cursor, block_tokens) : std::nullopt;
    if (indexed != block) {  // a miss (or, never in practice, an index collision)
      if (!reserved && block >= 0) DropRef(block);
      break;
    }
    if (!reserved) {
      seq.blocks.push_back(block);
      seq.data.push_back(blocks_[block].data);
    }
    seq.cursor = index_.CursorAfter(block);
    ++seq.indexed;
    seq.length += kBlockTokens;
    added += kBlockTokens;
  }
  return added;
}

int KvCache::SpillToDisk() {
  if (disk_ == nullptr) return 0;
  int written = 0;
  for (BlockId block : index_.IndexedBlocks()) {
    written += disk_->Store(index_.RecordOf(block), BlockBytes(block)) ? 1 : 0;
  }
  if (snapshot_disk_ != nullptr) {
    states_.ForEachPublished([&](BlockId block, const std::byte* data) {
      snapshot_disk_->Store(index_.RecordOf(block),
                            {data, static_cast<size_t>(layout_.recurrent_state_bytes)});
    });
  }
  return written;
}

void KvCache::FindOnDisk(PrefixCursor cursor, int b, std::span<const int> tokens, int limit,
                         std::vector<BlockId>& matched) {
  for (; (b + 1) * kBlockTokens <= limit; ++b) {
    const PrefixIndex::BlockTokens block_tokens =
        tokens.subspan(static_cast<size_t>(b) * kBlockTokens).first<kBlockTokens>();
    const BlockRecord want = RecordAfter(cursor, block_tokens);
    BlockId block = -1;
    const bool loaded = disk_->Load(want, [&]() -> std::span<std::byte> {
      if (!Fits(1, 0)) return {};
      absl::StatusOr<BlockId> taken = TakeBlock();
      if (!taken.ok()) return {};
      block = *taken;
      return BlockBytes(block);
    });
    const std::optional<BlockId> indexed =
        loaded ? index_.Insert(block, cursor, block_tokens) : std::nullopt;
    if (!indexed.has_value() || *indexed != block) {
      if (block >= 0) DropRef(block);
      break;
    }
    matched.push_back(block);  // still referenced from TakeBlock
    cursor = index_.CursorAfter(block);
  }
}

bool KvCache::LoadSnapshot(BlockId block) {
  if (!Fits(0, 1)) return false;
  absl::StatusOr<std::byte*> buffer = TakeBuffer();
  if (!buffer.ok()) return false;
  const std::span<std::byte> out(*buffer, static_cast<size_t>(layout_.recurrent_state_bytes));
  if (snapshot_disk_->Load(index_.RecordOf(block), out) && states_.Publish(block, *buffer)) {
    --buffers_held_;  // the pool's now
    return true;
  }
  GiveBuffer(*buffer);
  return false;
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
  const int64_t new_blocks = std::max<int64_t>(want_blocks - have_blocks, 0);
  const bool new_state = has_recurrent_state() && seq->state == nullptr;
  const bool new_checkpoint = checkpoints_ && seq->checkpoint == nullptr;
  const int64_t new_states = (new_state ? 1 : 0) + (new_checkpoint ? 1 : 0);
  if (new_blocks == 0 && new_states == 0) return absl::OkStatus();
  if (!Fits(new_blocks, new_states)) return ExhaustedError(id, n_tokens, new_blocks, new_states);
  if (new_state) TEXTGEN_RETURN_IF_ERROR(TakeState(*seq));
  if (new_checkpoint) {
    TEXTGEN_ASSIGN_OR_RETURN(seq->checkpoint, TakeBuffer());
  }
  for (int64_t i = 0; i < new_blocks; ++i) {
    absl::StatusOr<BlockId> block = TakeBlock();
    if (!block.ok()) return block.status();  // blocks taken so far stay with the sequence
    seq->blocks.push_back(*block);
    seq->data.push_back(blocks_[*block].data);
  }
  return absl::OkStatus();
}

void KvCache::Publish(SequenceId id, std::span<const int> tokens) {
  Sequence* seq = Find(id);
  if (seq == nullptr || !seq->indexable) return;
  const int full = std::min(seq->length, static_cast<int>(tokens.size())) / kBlockTokens;
  while (seq->indexed < full) {
    const size_t b = static_cast<size_t>(seq->indexed);
    const BlockId mine = seq->blocks[b];
    std::optional<BlockId> indexed =
        index_.Insert(mine, seq->cursor, tokens.subspan(b * kBlockTokens).first<kBlockTokens>());
    if (!indexed.has_value()) {
      seq->indexable = false;
      break;
    }
    if (*indexed != mine) {  // computed twice: keep one copy (the K/V are bitwise equal)
      AddRef(*indexed);
      SetBlock(*seq, b, *indexed);
    } else if (disk_ != nullptr) {
      // Written as soon as it is computed: a crash loses none of it, and a replica sharing
      // the directory can continue this prefix at once (~0.2 ms a MiB into the page cache).
      disk_->Store(index_.RecordOf(mine), BlockBytes(mine));
    }
    seq->cursor = index_.CursorAfter(*indexed);
    ++seq->indexed;
  }
  if (has_recurrent_state()) PublishSnapshots(*seq);
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

absl::StatusOr<KvCache::Sequence*> KvCache::FindToShorten(SequenceId id, int n_tokens,
                                                          const char* operation) {
  Sequence* seq = Find(id);
  if (seq == nullptr) return absl::NotFoundError(absl::StrCat("unknown KV sequence id ", id));
  if (n_tokens < 0 || n_tokens > seq->length) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, ": n_tokens must be in [0, ", seq->length, "], got ", n_tokens));
  }
  return seq;
}

absl::Status KvCache::Rewind(SequenceId id, int n_tokens) {
  TEXTGEN_ASSIGN_OR_RETURN(Sequence* const seq, FindToShorten(id, n_tokens, "Rewind"));
  if (has_recurrent_state() && n_tokens < seq->length) {
    if (seq->checkpoint_length < 0 || seq->checkpoint_length > n_tokens) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Rewind: KV sequence ", id, " carries a recurrent state, which holds position ",
          seq->length, " only, and no checkpoint at or before ", n_tokens));
    }
    n_tokens = seq->checkpoint_length;
  }
  const size_t used = (static_cast<size_t>(seq->length) + kBlockTokens - 1) / kBlockTokens;
  for (size_t b = static_cast<size_t>(n_tokens) / kBlockTokens; b < used; ++b) {
    if (Shared(seq->blocks[b])) {
      return absl::FailedPreconditionError(absl::StrCat("Rewind: block ", b, " of KV sequence ", id,
                                                        " is shared; Truncate copies it"));
    }
  }
  if (has_recurrent_state() && n_tokens < seq->length) {
    std::memcpy(seq->state, seq->checkpoint, static_cast<size_t>(layout_.recurrent_state_bytes));
    seq->checkpoint_length = -1;
    DropPending(*seq, n_tokens / kBlockTokens);  // snapshots past it came from dropped tokens
  }
  seq->length = n_tokens;
  return absl::OkStatus();
}

absl::Status KvCache::Truncate(SequenceId id, int n_tokens) {
  TEXTGEN_ASSIGN_OR_RETURN(Sequence* const seq, FindToShorten(id, n_tokens, "Truncate"));
  if (has_recurrent_state() && n_tokens < seq->length) {
    // The state cannot go back: start over (the state stays the sequence's, zeroed).
    n_tokens = 0;
    DropPending(*seq, 0);
    seq->checkpoint_length = -1;
    if (seq->state != nullptr) {
      std::memset(seq->state, 0, static_cast<size_t>(layout_.recurrent_state_bytes));
    }
  }
  seq->length = n_tokens;
  const size_t keep = (static_cast<size_t>(n_tokens) + kBlockTokens - 1) / kBlockTokens;
  DropBlocksFrom(*seq, keep);
  if (seq->indexed > n_tokens / kBlockTokens) RewindIndex(*seq, n_tokens / kBlockTokens);
  if (n_tokens % kBlockTokens != 0 && Shared(seq->blocks[keep - 1])) {
    // The next token is written into this block: it must become this sequence's own.
    if (!Fits(1, 0)) {
      seq->length = n_tokens - n_tokens % kBlockTokens;
      DropBlocksFrom(*seq, keep - 1);
      return absl::OkStatus();
    }
    absl::StatusOr<BlockId> copy = TakeBlock();
    if (!copy.ok()) return copy.status();
    std::memcpy(blocks_[*copy].data, seq->data[keep - 1], static_cast<size_t>(block_bytes_));
    SetBlock(*seq, keep - 1, *copy);
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
  const bool copies_state = has_recurrent_state() && src->state != nullptr && n_tokens > 0;
  if (has_recurrent_state() && n_tokens > 0 && n_tokens < src->length) {
    return absl::FailedPreconditionError(
        absl::StrCat("Fork: KV sequence ", id, " carries a recurrent state, which holds position ",
                     src->length, " only"));
  }
  const size_t full = static_cast<size_t>(n_tokens / kBlockTokens);
  const bool partial = n_tokens % kBlockTokens != 0;
  if (!Fits(partial ? 1 : 0, copies_state ? 1 : 0)) {
    return ExhaustedError(id, n_tokens, partial ? 1 : 0, copies_state ? 1 : 0);
  }
  const SequenceId fork_id = NewSequence(src->scope);  // may rehash: look both up again
  Sequence& dst = sequences_[fork_id];
  const Sequence& from = sequences_[id];
  for (size_t b = 0; b < full; ++b) {
    AddRef(from.blocks[b]);
    dst.blocks.push_back(from.blocks[b]);
    dst.data.push_back(from.data[b]);
  }
  if (partial) {
    absl::StatusOr<BlockId> copy = TakeBlock();
    if (!copy.ok()) {
      Free(fork_id).IgnoreError();  // exists: created above
      return copy.status();
    }
    // The whole block is copied; slots past n_tokens are never read before being rewritten.
    std::memcpy(blocks_[*copy].data, from.data[full], static_cast<size_t>(block_bytes_));
    dst.blocks.push_back(*copy);
    dst.data.push_back(blocks_[*copy].data);
  }
  if (copies_state) {
    if (absl::Status taken = TakeState(dst); !taken.ok()) {
      Free(fork_id).IgnoreError();  // exists: created above
      return taken;
    }
    std::memcpy(dst.state, from.state, static_cast<size_t>(layout_.recurrent_state_bytes));
  }
  dst.length = n_tokens;
  RewindIndex(dst, std::min(from.indexed, static_cast<int>(full)));
  dst.indexable = from.indexable || dst.indexed < from.indexed;
  return fork_id;
}

absl::Status KvCache::Free(SequenceId id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown KV sequence id ", id));
  }
  DropBlocksFrom(it->second, 0);
  DropState(it->second);
  sequences_.erase(it);
  return absl::OkStatus();
}

int64_t KvCache::BytesFreedByDropping(std::span<const SequenceId> ids) const {
  absl::flat_hash_map<BlockId, int> held;
  int64_t states = 0;
  for (SequenceId id : ids) {
    if (const Sequence* seq = Find(id)) {
      for (BlockId block : seq->blocks) ++held[block];
      states += (seq->state != nullptr ? 1 : 0) + (seq->checkpoint != nullptr ? 1 : 0) +
                static_cast<int64_t>(seq->pending.size());
    }
  }
  int64_t freed = 0;
  for (const auto& [block, count] : held) freed += count == blocks_[block].refs ? 1 : 0;
  return freed * block_bytes_ + states * layout_.recurrent_state_bytes;
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
  if (has_recurrent_state()) TakeSnapshot(*seq);
  return absl::OkStatus();
}

ops::PagedKvLayout KvCache::LayerLayout(int layer) const {
  return ops::PagedKvLayout{
      .block_tokens = kBlockTokens,
      .n_kv_heads = layout_.n_kv_heads,
      .head_dim = layout_.head_dim,
      .k_offset = ElementOffset(layer, 0, 0, 0),
      .v_offset = ElementOffset(layer, 1, 0, 0),
      .head_stride = static_cast<int64_t>(kBlockTokens) * layout_.head_dim,
      // 2-byte elements are IEEE half: the cache's element size is the one record of it.
      .f16 = layout_.bytes_per_element == 2};
}

std::byte* const* KvCache::BlockTable(SequenceId id) const {
  const Sequence* seq = Find(id);
  return seq == nullptr ? nullptr : seq->data.data();
}

}  // namespace textgen::model
