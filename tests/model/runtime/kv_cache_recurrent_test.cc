// KvCache with a recurrent state per sequence (hybrid models): the state is taken with the
// first Reserve under the same budget, zeroed, and can only be kept whole or started over.
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/runtime/kv_cache.h"

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

TEST(KvCacheRecurrentTest, PrefixesAreNeitherPublishedNorAttached) {
  KvCache cache(kHybrid, 10 * kState);
  std::vector<int> tokens(32);
  for (int i = 0; i < 32; ++i) tokens[i] = i;
  const SequenceId a = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(a, 32).ok());
  ASSERT_TRUE(cache.Append(a, 32).ok());
  cache.Publish(a, tokens);
  EXPECT_EQ(cache.indexed_blocks(), 0);
  const SequenceId b = cache.NewSequence();
  EXPECT_EQ(cache.AttachPrefix(b, tokens, 31), 0);
  EXPECT_EQ(cache.Length(b), 0);
}

}  // namespace
}  // namespace textgen::model
