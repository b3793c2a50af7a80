// KvCache with a recurrent state per sequence (hybrid models): the state is taken with the
// first Reserve under the same budget, zeroed, and can only be kept whole or started over;
// snapshots of it at block boundaries let other sequences continue a shared prefix.
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/runtime/kv_cache.h"
#include "model/runtime/kv_disk_tier.h"

namespace textgen::model {
namespace {

using ::testing::HasSubstr;

// One attention layer, 2 kv heads of 4 floats: a block is 16*1*2*2*4*4 = 1024 bytes; a state
// is 3000 bytes.
constexpr KvCacheLayout kHybrid{.n_layers = 1,
                                .n_kv_heads = 2,
                                .head_dim = 4,
                                .bytes_per_element = 4,
                                .recurrent_state_bytes = 3000};
constexpr int64_t kBlock = 1024;
constexpr int64_t kState = 3000;

// Marks a sequence's state so copies and resets can be told apart.
void Scribble(KvCache& cache, SequenceId id, std::byte value) {
  std::memset(cache.RecurrentState(id), static_cast<int>(value), kState);
}

bool StateIs(const KvCache& cache, SequenceId id, std::byte value) {
  const std::byte* state = cache.RecurrentState(id);
  for (int64_t i = 0; i < kState; ++i) {
    if (state[i] != value) return false;
  }
  return true;
}

TEST(KvCacheRecurrentTest, FirstReserveTakesAZeroedStateUnderTheBudget) {
  KvCache cache(kHybrid, kState + 2 * kBlock);
  ASSERT_TRUE(cache.has_recurrent_state());
  const SequenceId a = cache.NewSequence();
  EXPECT_EQ(cache.RecurrentState(a), nullptr);  // a new sequence holds nothing
  EXPECT_EQ(cache.bytes_in_use(), 0);
  ASSERT_TRUE(cache.Reserve(a, 20).ok());
  ASSERT_NE(cache.RecurrentState(a), nullptr);
  EXPECT_TRUE(StateIs(cache, a, std::byte{0}));
  EXPECT_EQ(cache.bytes_in_use(), kState + 2 * kBlock);
  EXPECT_EQ(cache.BytesForTokens(20), kState + 2 * kBlock);
  // A second sequence's state does not fit: RESOURCE_EXHAUSTED naming the bytes, nothing taken.
  const SequenceId b = cache.NewSequence();
  const absl::Status refused = cache.Reserve(b, 1);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr(absl::StrCat(kState + kBlock, " more bytes")));
  EXPECT_EQ(cache.RecurrentState(b), nullptr);
  EXPECT_EQ(cache.bytes_in_use(), kState + 2 * kBlock);
  // Freeing gives the state back; a recycled state comes zeroed.
  Scribble(cache, a, std::byte{7});
  ASSERT_TRUE(cache.Free(a).ok());
  EXPECT_EQ(cache.bytes_in_use(), 0);
  ASSERT_TRUE(cache.Reserve(b, 1).ok());
  EXPECT_TRUE(StateIs(cache, b, std::byte{0}));
}

TEST(KvCacheRecurrentTest, TruncateKeepsTheWholeStateOrStartsOver) {
  KvCache cache(kHybrid, 10 * kState);
  const SequenceId a = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(a, 40).ok());
  ASSERT_TRUE(cache.Append(a, 30).ok());
  Scribble(cache, a, std::byte{5});
  // To its whole length: spare blocks go back, the state stays.
  ASSERT_TRUE(cache.Truncate(a, 30).ok());
  EXPECT_EQ(cache.Length(a), 30);
  EXPECT_EQ(cache.Capacity(a), 32);
  EXPECT_TRUE(StateIs(cache, a, std::byte{5}));
  // Shorter: the state holds position 30 only, so the sequence starts over (zeroed state, kept).
  ASSERT_TRUE(cache.Truncate(a, 17).ok());
  EXPECT_EQ(cache.Length(a), 0);
  EXPECT_EQ(cache.Capacity(a), 0);
  ASSERT_NE(cache.RecurrentState(a), nullptr);
  EXPECT_TRUE(StateIs(cache, a, std::byte{0}));
  EXPECT_EQ(cache.bytes_in_use(), kState);
}

TEST(KvCacheRecurrentTest, RewindAndForkRefuseToCutAState) {
  KvCache cache(kHybrid, 10 * kState);
  const SequenceId a = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(a, 20).ok());
  ASSERT_TRUE(cache.Append(a, 20).ok());
  Scribble(cache, a, std::byte{9});
  const absl::Status rewound = cache.Rewind(a, 18);
  EXPECT_EQ(rewound.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(rewound.message(), HasSubstr("recurrent state"));
  EXPECT_EQ(cache.Length(a), 20);
  EXPECT_TRUE(cache.Rewind(a, 20).ok());  // a no-op is fine
  EXPECT_EQ(cache.Fork(a, 10).status().code(), absl::StatusCode::kFailedPrecondition);
  // A whole fork copies the state; an empty one has none until it reserves.
  absl::StatusOr<SequenceId> whole = cache.Fork(a, 20);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_TRUE(StateIs(cache, *whole, std::byte{9}));
  EXPECT_NE(cache.RecurrentState(*whole), cache.RecurrentState(a));
  absl::StatusOr<SequenceId> empty = cache.Fork(a, 0);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(cache.RecurrentState(*empty), nullptr);
  const SequenceId ids[] = {a};
  EXPECT_EQ(cache.BytesFreedByDropping(ids), kState + kBlock);  // the full block is shared
}

std::vector<int> Iota(int n) {
  std::vector<int> tokens(n);
  for (int i = 0; i < n; ++i) tokens[i] = i;
  return tokens;
}

// Stores `n` tokens' K/V (nothing written: the cache does not read them) with the state set
// to `value` before each Append, so every snapshot records where it was taken.
void Advance(KvCache& cache, SequenceId id, int n, std::byte value) {
  ASSERT_TRUE(cache.Reserve(id, cache.Length(id) + n).ok());
  Scribble(cache, id, value);
  ASSERT_TRUE(cache.Append(id, n).ok());
}

TEST(KvCacheRecurrentTest, SnapshotsEveryIntervalAndTheLatestBoundary) {
  // A state of 3000 bytes over blocks of 1024: a snapshot kept every 3 blocks (48 tokens).
  KvCache cache(kHybrid, 100 * kState);
  EXPECT_EQ(cache.SnapshotIntervalBlocks(), 3);
  const std::vector<int> tokens = Iota(200);
  const SequenceId a = cache.NewSequence();
  Advance(cache, a, 16, std::byte{1});                       // block 0: the latest
  Advance(cache, a, 32, std::byte{3});                       // block 2: an interval boundary, kept
  Advance(cache, a, 20, std::byte{4});                       // 68: not on a boundary, no snapshot
  Advance(cache, a, 12, std::byte{5});                       // block 4: replaces block 0's
  Advance(cache, a, 3, std::byte{6});                        // 83
  EXPECT_EQ(cache.bytes_in_use(), 3 * kState + 6 * kBlock);  // state + 2 snapshots + blocks
  cache.Publish(a, tokens);
  EXPECT_EQ(cache.snapshots(), 2);
  EXPECT_EQ(cache.bytes_in_use(), kState + 6 * kBlock);
  // A sequence on the same tokens continues from the deepest snapshot (80 of at most 82), with
  // that state; one that parts after 60 tokens from the one at 48.
  const SequenceId b = cache.NewSequence();
  EXPECT_EQ(cache.AttachPrefix(b, tokens, 82), 80);
  EXPECT_EQ(cache.Length(b), 80);
  EXPECT_TRUE(StateIs(cache, b, std::byte{5}));
  std::vector<int> other = tokens;
  other[60] = 999;
  const SequenceId c = cache.NewSequence();
  EXPECT_EQ(cache.AttachPrefix(c, other, 82), 48);
  EXPECT_TRUE(StateIs(cache, c, std::byte{3}));
  // A sequence continued from one snapshot goes on to a deeper one.
  const SequenceId g = cache.NewSequence();
  EXPECT_EQ(cache.AttachPrefix(g, tokens, 50), 48);
  EXPECT_EQ(cache.AttachPrefix(g, tokens, 82), 32);
  EXPECT_EQ(cache.Length(g), 80);
  EXPECT_TRUE(StateIs(cache, g, std::byte{5}));
  // Before the first snapshot there is nothing to continue from.
  other[20] = 999;
  const SequenceId d = cache.NewSequence();
  EXPECT_EQ(cache.AttachPrefix(d, other, 82), 0);
  EXPECT_EQ(cache.RecurrentState(d), nullptr);
}

TEST(KvCacheRecurrentTest, PublishedSnapshotsGiveWayToStatesLeastRecentlyUsedFirst) {
  // Room for 4 state buffers and a few blocks: two published snapshots, then two sequences
  // that need states of their own.
  KvCache cache(kHybrid, 4 * kState + 8 * kBlock);
  const std::vector<int> tokens = Iota(64);
  std::vector<int> other = tokens;
  other[0] = 999;
  const SequenceId a = cache.NewSequence();
  Advance(cache, a, 16, std::byte{1});
  cache.Publish(a, tokens);
  ASSERT_TRUE(cache.Free(a).ok());
  const SequenceId b = cache.NewSequence();
  Advance(cache, b, 16, std::byte{2});
  cache.Publish(b, other);
  ASSERT_TRUE(cache.Free(b).ok());
  EXPECT_EQ(cache.snapshots(), 2);
  EXPECT_EQ(cache.bytes_in_use(), 0);
  EXPECT_EQ(cache.bytes_cached(), 2 * kState + 2 * kBlock);
  // Using the first makes the second the least recently used.
  const SequenceId c = cache.NewSequence();
  EXPECT_EQ(cache.AttachPrefix(c, tokens, 20), 16);
  std::vector<SequenceId> fresh;
  for (int i = 0; i < 3; ++i) {
    fresh.push_back(cache.NewSequence());
    ASSERT_TRUE(cache.Reserve(fresh.back(), 1).ok()) << i;
  }
  EXPECT_EQ(cache.evicted_snapshots(), 1);
  const SequenceId e = cache.NewSequence();
  EXPECT_EQ(cache.AttachPrefix(e, other, 20), 0);  // gone
  ASSERT_TRUE(cache.Free(e).ok());
  ASSERT_TRUE(cache.Free(c).ok());
  const SequenceId f = cache.NewSequence();
  EXPECT_EQ(cache.AttachPrefix(f, tokens, 20), 16);  // kept
  EXPECT_TRUE(StateIs(cache, f, std::byte{1}));
}

// Speculative decoding: a checkpoint buffer per sequence (admission counts it); Rewind past
// drafted tokens goes back to where the checkpointed chunk began.
TEST(KvCacheRecurrentTest, CheckpointsLetRewindGoBackPastDrafts) {
  KvCache cache(kHybrid, 10 * kState);
  cache.EnableCheckpoints();
  EXPECT_EQ(cache.BytesForTokens(1), 2 * kState + kBlock);
  const SequenceId a = cache.NewSequence();
  Advance(cache, a, 20, std::byte{1});
  EXPECT_EQ(cache.bytes_in_use(), 2 * kState + 2 * kBlock);
  // Without a checkpoint the state cannot go back.
  EXPECT_EQ(cache.Rewind(a, 18).code(), absl::StatusCode::kFailedPrecondition);
  Scribble(cache, a, std::byte{2});
  cache.Checkpoint(a);                 // at 20
  Advance(cache, a, 9, std::byte{3});  // a chunk of drafts: 29, crossing block 1's end
  // Rejected after two accepted: back to 20 (the caller feeds 21 and 22 again), the state as it
  // was there, the reserved room kept; a second Rewind has no checkpoint left.
  ASSERT_TRUE(cache.Rewind(a, 22).ok());
  EXPECT_EQ(cache.Length(a), 20);
  EXPECT_EQ(cache.Capacity(a), 32);
  EXPECT_TRUE(StateIs(cache, a, std::byte{2}));
  EXPECT_EQ(cache.Rewind(a, 19).code(), absl::StatusCode::kFailedPrecondition);
  // A snapshot taken past the checkpoint (a chunk of drafts ending on a boundary) goes with
  // the drafts that made it.
  cache.Checkpoint(a);
  Advance(cache, a, 12, std::byte{4});  // 32: a snapshot of block 1
  ASSERT_TRUE(cache.Rewind(a, 25).ok());
  cache.Publish(a, Iota(40));
  EXPECT_EQ(cache.snapshots(), 0);
  ASSERT_TRUE(cache.Free(a).ok());
  EXPECT_EQ(cache.bytes_in_use(), 0);
}

// The disk tier keeps snapshots beside the blocks: after a restart on the same directory a
// sequence continues from the deepest snapshot found there, with its bytes.
std::unique_ptr<KvDiskTier> OpenTier(const std::string& dir, uint64_t kind, int64_t bytes) {
  absl::StatusOr<std::unique_ptr<KvDiskTier>> tier =
      KvDiskTier::Open({.dir = dir,
                        .max_bytes = int64_t{1} << 30,
                        .name_space = BlockKey{.lo = 0x1234, .hi = kind},
                        .block_bytes = bytes,
                        .warn = nullptr});
  EXPECT_TRUE(tier.ok()) << tier.status();
  return tier.ok() ? *std::move(tier) : nullptr;
}

TEST(KvCacheRecurrentTest, SnapshotsSurviveARestartThroughTheDiskTier) {
  std::string dir = (std::filesystem::path(::testing::TempDir()) / "kvstates-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::vector<int> tokens = Iota(200);
  const auto open_cache = [&]() {
    auto cache = std::make_unique<KvCache>(kHybrid, 100 * kState);
    cache->AttachDiskTier(OpenTier(dir, 1, kBlock));
    cache->AttachSnapshotTier(OpenTier(dir, 2, kState));
    return cache;
  };
  {
    std::unique_ptr<KvCache> cache = open_cache();
    const SequenceId a = cache->NewSequence();
    Advance(*cache, a, 48, std::byte{3});  // block 2: kept
    Advance(*cache, a, 32, std::byte{5});  // block 4: the latest
    Advance(*cache, a, 7, std::byte{6});
    cache->Publish(a, tokens);
    EXPECT_EQ(cache->snapshot_tier()->stats().writes, 2);
  }
  std::unique_ptr<KvCache> cache = open_cache();  // a restart: memory holds nothing
  const SequenceId b = cache->NewSequence();
  EXPECT_EQ(cache->AttachPrefix(b, tokens, 100), 80);
  EXPECT_TRUE(StateIs(*cache, b, std::byte{5}));
  EXPECT_EQ(cache->disk_tier()->stats().reads, 5);
  EXPECT_EQ(cache->snapshot_tier()->stats().reads, 1);
  // The blocks and the snapshot are in memory now: another sequence takes them from there.
  const SequenceId c = cache->NewSequence();
  EXPECT_EQ(cache->AttachPrefix(c, tokens, 60), 48);  // block 2's snapshot, still on disk
  EXPECT_TRUE(StateIs(*cache, c, std::byte{3}));
  EXPECT_EQ(cache->snapshot_tier()->stats().reads, 2);
  std::filesystem::remove_all(dir);
}

TEST(KvCacheRecurrentTest, SnapshotStopsEndPrefillChunksWhereSnapshotsAreKept) {
  KvCache cache(kHybrid, 100 * kState);  // interval: 3 blocks, 48 tokens
  EXPECT_EQ(cache.SnapshotStop(0, 200), 48);
  EXPECT_EQ(cache.SnapshotStop(48, 200), 96);
  EXPECT_EQ(cache.SnapshotStop(150, 200), 192);  // the prompt's last block boundary
  EXPECT_EQ(cache.SnapshotStop(192, 200), 200);  // the end
  EXPECT_EQ(cache.SnapshotStop(0, 30), 16);
  EXPECT_EQ(cache.SnapshotStop(30, 30), 30);
  // A prefix others share (blocks indexed without a snapshot at their end): a sequence that
  // continues from a snapshot inside it stops again where the shared run ends.
  const std::vector<int> tokens = Iota(200);
  const SequenceId a = cache.NewSequence();
  Advance(cache, a, 48, std::byte{1});
  Advance(cache, a, 32, std::byte{2});
  Advance(cache, a, 10, std::byte{3});
  cache.Publish(a, tokens);  // blocks 0-4 indexed, snapshots at 48 and 80
  std::vector<int> prompt(tokens.begin(), tokens.begin() + 70);
  prompt.insert(prompt.end(), 60, 7);  // parts from a's at 70: blocks 0-3 shared
  const SequenceId b = cache.NewSequence();
  EXPECT_EQ(cache.AttachPrefix(b, prompt, 129), 48);
  EXPECT_EQ(cache.SnapshotStop(b, prompt), 64);                    // the end of the shared run
  EXPECT_EQ(cache.SnapshotStop(cache.NewSequence(), prompt), 48);  // an interval comes first
  KvCache plain(KvCacheLayout{.n_layers = 1, .n_kv_heads = 1, .head_dim = 4}, 1 << 20);
  EXPECT_EQ(plain.SnapshotIntervalBlocks(), 0);
  EXPECT_EQ(plain.SnapshotStop(0, 200), 200);
}

}  // namespace
}  // namespace textgen::model
