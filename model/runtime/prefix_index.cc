#include "model/runtime/prefix_index.h"

#include <algorithm>
#include <cstring>

#include "xxhash.h"

namespace textgen::model {
namespace {

// splitmix64's finaliser: every input bit reaches every output bit.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The in-memory index key: fast, and only a hint (entries are verified).
uint64_t ChainBlockHash(uint64_t parent, PrefixIndex::BlockTokens tokens) {
  uint64_t h = Mix(parent ^ 0x9e3779b97f4a7c15ULL);
  for (int token : tokens) h = Mix(h ^ static_cast<uint32_t>(token));
  return h;
}

}  // namespace

PrefixScope ScopeOfPrincipal(std::string_view principal) {
  constexpr uint64_t kSeed = 0x746578746765'6e31ULL;  // "textgen1"
  return XXH3_64bits_withSeed(principal.data(), principal.size(), kSeed);
}

// Tokens are hashed as 32-bit little-endian integers (this build's layout on x86-64 and
// arm64), so keys written by one machine are found by another.
BlockKey ChainBlockKey(const BlockKey& parent, PrefixIndex::BlockTokens tokens) {
  std::array<std::byte, 16 + 4 * kKvBlockTokens> bytes;
  std::memcpy(bytes.data(), &parent.lo, 8);
  std::memcpy(bytes.data() + 8, &parent.hi, 8);
  std::memcpy(bytes.data() + 16, tokens.data(), 4 * kKvBlockTokens);
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return BlockKey{.lo = h.low64, .hi = h.high64};
}

BlockKey RootBlockKey(PrefixScope scope) {
  std::array<std::byte, 24> bytes;
  std::memcpy(bytes.data(), "textgen/kv-scope", 16);
  std::memcpy(bytes.data() + 16, &scope, 8);
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return BlockKey{.lo = h.low64, .hi = h.high64};
}

PrefixCursor PrefixIndex::Root(PrefixScope scope) {
  return PrefixCursor{.scope = scope, .content = RootBlockKey(scope), .serial = 0, .blocks = 0};
}

// The index key of a block continuing `at`: chained over the parent's serial, not its
// content key, so an orphan (a block whose parent was evicted and later indexed again under
// a new serial) can never be found, nor stand in the way of its recomputed successor.
uint64_t PrefixIndex::KeyOf(const PrefixCursor& at, BlockTokens tokens) {
  return ChainBlockHash(at.serial != 0 ? at.serial : at.content.lo, tokens);
}

std::optional<BlockId> PrefixIndex::Find(const PrefixCursor& at, BlockTokens tokens) const {
  auto it = by_key_.find(KeyOf(at, tokens));
  if (it == by_key_.end()) return std::nullopt;
  const Entry& e = entries_[it->second];
  if (e.parent_serial != at.serial || e.scope != at.scope ||
      !std::equal(tokens.begin(), tokens.end(), e.tokens.begin())) {
    return std::nullopt;  // a hash collision, not this prefix
  }
  return it->second;
}

PrefixCursor PrefixIndex::CursorAfter(BlockId block) const {
  const Entry& e = entries_[block];
  return PrefixCursor{
      .scope = e.scope, .content = e.content, .serial = e.serial, .blocks = e.depth};
}

BlockRecord PrefixIndex::RecordOf(BlockId block) const {
  const Entry& e = entries_[block];
  return BlockRecord{.parent = e.parent_content, .key = e.content, .tokens = e.tokens};
}

std::vector<BlockId> PrefixIndex::IndexedBlocks() const {
  std::vector<BlockId> blocks;
  blocks.reserve(by_key_.size());
  for (const auto& [key, block] : by_key_) blocks.push_back(block);
  return blocks;
}

PrefixIndex::Entry& PrefixIndex::EntryFor(BlockId block) {
  if (block >= static_cast<BlockId>(entries_.size())) entries_.resize(block + 1);
  return entries_[block];
}

std::optional<BlockId> PrefixIndex::Insert(BlockId block, const PrefixCursor& at,
                                           BlockTokens tokens) {
  if (Contains(block)) {  // indexed already: only where it stands
    std::optional<BlockId> found = Find(at, tokens);
    return found == block ? found : std::nullopt;
  }
  const uint64_t key = KeyOf(at, tokens);
  auto [it, inserted] = by_key_.try_emplace(key, block);
  if (!inserted) {
    if (Find(at, tokens).has_value()) return it->second;
    return std::nullopt;
  }
  Entry& e = EntryFor(block);
  e = Entry{};
  e.serial = next_serial_++;
  e.parent_serial = at.serial;
  e.scope = at.scope;
  e.key = key;
  e.parent_content = at.content;
  e.content = ChainBlockKey(at.content, tokens);
  e.depth = at.blocks + 1;
  std::copy(tokens.begin(), tokens.end(), e.tokens.begin());
  return block;
}

void PrefixIndex::Unlink(BlockId block) {
  Entry& e = entries_[block];
  if (e.lru_prev != kNone) {
    entries_[e.lru_prev].lru_next = e.lru_next;
  } else {
    lru_oldest_ = e.lru_next;
  }
  if (e.lru_next != kNone) {
    entries_[e.lru_next].lru_prev = e.lru_prev;
  } else {
    lru_newest_ = e.lru_prev;
  }
  e.lru_prev = e.lru_next = kNone;
  e.idle = false;
  --idle_blocks_;
}

void PrefixIndex::MarkIdle(BlockId block) {
  if (!Contains(block) || entries_[block].idle) return;
  Entry& e = entries_[block];
  e.idle = true;
  e.lru_prev = lru_newest_;
  e.lru_next = kNone;
  if (lru_newest_ != kNone) {
    entries_[lru_newest_].lru_next = block;
  } else {
    lru_oldest_ = block;
  }
  lru_newest_ = block;
  ++idle_blocks_;
}

void PrefixIndex::MarkBusy(BlockId block) {
  if (Contains(block) && entries_[block].idle) Unlink(block);
}

std::optional<PrefixIndex::Evicted> PrefixIndex::EvictLeastRecentlyUsed() {
  if (lru_oldest_ == kNone) return std::nullopt;
  const BlockId block = lru_oldest_;
  Evicted evicted{.block = block, .record = RecordOf(block)};
  Unlink(block);
  by_key_.erase(entries_[block].key);
  entries_[block] = Entry{};
  return evicted;
}

}  // namespace textgen::model
