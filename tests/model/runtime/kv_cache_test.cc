#include "model/runtime/kv_cache.h"

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace textgen::model {
namespace {

using ::testing::HasSubstr;

// 2 layers, 2 kv heads of 4 floats: a token costs 2*2*2*4*4 = 128 bytes, a block 2048.
constexpr KvCacheLayout kLayout{
    .n_layers = 2, .n_kv_heads = 2, .head_dim = 4, .bytes_per_element = 4};
constexpr int64_t kBlock = 2048;

TEST(KvCacheTest, BytesForTokensRoundsUpToBlocks) {
  KvCache cache(kLayout, 10 * kBlock);
  EXPECT_EQ(cache.block_bytes(), kBlock);
  EXPECT_EQ(cache.BytesForTokens(0), 0);
  EXPECT_EQ(cache.BytesForTokens(1), kBlock);
  EXPECT_EQ(cache.BytesForTokens(16), kBlock);
  EXPECT_EQ(cache.BytesForTokens(17), 2 * kBlock);
  EXPECT_EQ(cache.budget_bytes(), 10 * kBlock);
}

TEST(KvCacheTest, BlockBytesOfALayout) {
  EXPECT_EQ(KvBlockBytes(kLayout), kBlock);
  KvCacheLayout half = kLayout;
  half.bytes_per_element = 2;
  EXPECT_EQ(KvBlockBytes(half), kBlock / 2);
  EXPECT_EQ(KvBlockBytes(KvCacheLayout{}), 1);  // degenerate: arithmetic stays defined
}

TEST(KvCacheTest, NewSequenceHoldsNoMemory) {
  KvCache cache(kLayout, kBlock);
  SequenceId a = cache.NewSequence();
  SequenceId b = cache.NewSequence();
  EXPECT_NE(a, b);
  EXPECT_EQ(cache.Length(a), 0);
  EXPECT_EQ(cache.Capacity(a), 0);
  EXPECT_EQ(cache.bytes_in_use(), 0);
  EXPECT_EQ(cache.Length(12345), -1);
  EXPECT_FALSE(cache.Contains(12345));
}

TEST(KvCacheTest, ReserveGrowsInBlocksAndRespectsBudget) {
  KvCache cache(kLayout, 3 * kBlock);
  SequenceId a = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(a, 1).ok());
  EXPECT_EQ(cache.bytes_in_use(), kBlock);
  EXPECT_EQ(cache.Capacity(a), 16);
  ASSERT_TRUE(cache.Reserve(a, 16).ok());  // same block
  EXPECT_EQ(cache.bytes_in_use(), kBlock);
  ASSERT_TRUE(cache.Reserve(a, 40).ok());
  EXPECT_EQ(cache.bytes_in_use(), 3 * kBlock);
  EXPECT_EQ(cache.Length(a), 0);  // reserving stores nothing

  SequenceId b = cache.NewSequence();
  absl::Status s = cache.Reserve(b, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("needs 2048 more bytes"));
  EXPECT_THAT(s.message(), HasSubstr("0 of 6144 bytes available"));
  EXPECT_EQ(cache.bytes_in_use(), 3 * kBlock);  // failure changed nothing
  EXPECT_EQ(cache.Capacity(b), 0);

  // A request that would cross the budget fails whole, not partially.
  ASSERT_TRUE(cache.Free(a).ok());
  ASSERT_TRUE(cache.Reserve(b, 16).ok());
  EXPECT_EQ(cache.Reserve(b, 64).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cache.Capacity(b), 16);
  EXPECT_EQ(cache.Reserve(b, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.Reserve(999, 1).code(), absl::StatusCode::kNotFound);
}

TEST(KvCacheTest, AppendNeedsCapacity) {
  KvCache cache(kLayout, 4 * kBlock);
  SequenceId a = cache.NewSequence();
  EXPECT_FALSE(cache.Append(a, 1).ok());
  ASSERT_TRUE(cache.Reserve(a, 20).ok());
  ASSERT_TRUE(cache.Append(a, 20).ok());
  EXPECT_EQ(cache.Length(a), 20);
  ASSERT_TRUE(cache.Append(a, 12).ok());  // fills the second block
  EXPECT_FALSE(cache.Append(a, 1).ok());
}

TEST(KvCacheTest, TruncateReturnsSpareBlocks) {
  KvCache cache(kLayout, 4 * kBlock);
  SequenceId a = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(a, 64).ok());
  ASSERT_TRUE(cache.Append(a, 40).ok());
  EXPECT_EQ(cache.bytes_in_use(), 4 * kBlock);
  ASSERT_TRUE(cache.Truncate(a, 17).ok());
  EXPECT_EQ(cache.Length(a), 17);
  EXPECT_EQ(cache.bytes_in_use(), 2 * kBlock);
  EXPECT_EQ(cache.Truncate(a, 18).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(cache.Truncate(a, 0).ok());
  EXPECT_EQ(cache.bytes_in_use(), 0);
  EXPECT_EQ(cache.Truncate(77, 0).code(), absl::StatusCode::kNotFound);
}

// Speculative decoding drops rejected drafts: the length goes back, the reserved room stays.
TEST(KvCacheTest, RewindKeepsTheReservedRoom) {
  KvCache cache(kLayout, 4 * kBlock);
  SequenceId a = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(a, 64).ok());
  ASSERT_TRUE(cache.Append(a, 40).ok());
  ASSERT_TRUE(cache.Rewind(a, 17).ok());
  EXPECT_EQ(cache.Length(a), 17);
  EXPECT_EQ(cache.Capacity(a), 64);
  EXPECT_EQ(cache.bytes_in_use(), 4 * kBlock);
  ASSERT_TRUE(cache.Append(a, 47).ok());  // the room is all there
  EXPECT_EQ(cache.Rewind(a, 65).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.Rewind(77, 0).code(), absl::StatusCode::kNotFound);
  // A block others read is never written again: rewinding into it is refused, unchanged.
  SequenceId b = cache.NewSequence();
  ASSERT_TRUE(cache.Free(a).ok());
  ASSERT_TRUE(cache.Reserve(b, 32).ok());
  ASSERT_TRUE(cache.Append(b, 20).ok());
  std::vector<int> tokens(20, 7);
  cache.Publish(b, tokens);  // the first block is indexed: shared
  EXPECT_EQ(cache.Rewind(b, 10).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(cache.Length(b), 20);
  ASSERT_TRUE(cache.Rewind(b, 16).ok());  // past the shared block
  EXPECT_EQ(cache.Length(b), 16);
}

TEST(KvCacheTest, ForkSharesFullBlocksAndCopiesThePartialOne) {
  KvCache cache(kLayout, 5 * kBlock);
  SequenceId a = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(a, 40).ok());
  // Write a distinct value into every element of each of a's 3 blocks.
  for (int b = 0; b < 3; ++b) {
    float* block = reinterpret_cast<float*>(cache.BlockTable(a)[b]);
    for (int i = 0; i < kBlock / 4; ++i) block[i] = static_cast<float>(b * 10000 + i);
  }
  ASSERT_TRUE(cache.Append(a, 40).ok());
  absl::StatusOr<SequenceId> f = cache.Fork(a, 20);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(cache.Length(*f), 20);
  EXPECT_EQ(cache.BlockTable(a)[0], cache.BlockTable(*f)[0]);  // full block: shared
  EXPECT_EQ(cache.shared_blocks(), 1);
  EXPECT_EQ(cache.bytes_in_use(), 4 * kBlock);  // a's 3 + the copied partial block
  // Position 19 of layer 1, V, head 1 must match the source.
  const int64_t off = cache.ElementOffset(1, 1, 1, 19 % 16);
  const float* src = reinterpret_cast<const float*>(cache.BlockTable(a)[1]) + off;
  const float* dst = reinterpret_cast<const float*>(cache.BlockTable(*f)[1]) + off;
  EXPECT_EQ(std::memcmp(src, dst, 4 * sizeof(float)), 0);
  EXPECT_NE(cache.BlockTable(a)[1], cache.BlockTable(*f)[1]);  // written next: a copy

  // The fork is independent: freeing the source leaves it intact.
  ASSERT_TRUE(cache.Free(a).ok());
  EXPECT_EQ(cache.bytes_in_use(), 2 * kBlock);
  EXPECT_EQ(cache.shared_blocks(), 0);
  EXPECT_EQ(reinterpret_cast<const float*>(cache.BlockTable(*f)[1])[off], 10000.0f + off);

  // Over budget (only the partial block needs memory) and bad lengths.
  SequenceId c = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(c, 48).ok());
  EXPECT_EQ(cache.Fork(*f, 20).status().code(), absl::StatusCode::kResourceExhausted);
  absl::StatusOr<SequenceId> whole = cache.Fork(*f, 16);
  ASSERT_TRUE(whole.ok()) << whole.status();  // one full block: shared, no memory needed
  EXPECT_EQ(cache.bytes_in_use(), 5 * kBlock);
  EXPECT_EQ(cache.Fork(*f, 21).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.Fork(999, 0).status().code(), absl::StatusCode::kNotFound);
}

TEST(KvCacheTest, FreeReturnsEverythingAndInvalidatesId) {
  KvCache cache(kLayout, 8 * kBlock);
  SequenceId a = cache.NewSequence();
  SequenceId b = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(a, 33).ok());
  ASSERT_TRUE(cache.Reserve(b, 16).ok());
  EXPECT_EQ(cache.bytes_in_use(), 4 * kBlock);
  EXPECT_EQ(cache.num_sequences(), 2);
  ASSERT_TRUE(cache.Free(a).ok());
  EXPECT_EQ(cache.bytes_in_use(), kBlock);
  EXPECT_FALSE(cache.Contains(a));
  EXPECT_EQ(cache.Free(a).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(cache.BlockTable(a), nullptr);
  // Freed blocks are recycled: the whole budget can be used again.
  SequenceId c = cache.NewSequence();
  EXPECT_TRUE(cache.Reserve(c, 7 * 16).ok());
  EXPECT_EQ(cache.bytes_in_use(), 8 * kBlock);
}

}  // namespace
}  // namespace textgen::model
