// The prefix index of the KV cache: sharing, scopes, eviction, copy-on-write, and a
// property test of random request streams against a reference model of what each
// sequence's K/V must hold.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "model/runtime/kv_cache.h"

namespace textgen::model {
namespace {

// 1 layer, 1 kv head of 4 floats: a token costs 1*2*1*4*4 = 32 bytes, a block 512.
constexpr KvCacheLayout kLayout{
    .n_layers = 1, .n_kv_heads = 1, .head_dim = 4, .bytes_per_element = 4};
constexpr int64_t kBlock = 512;
constexpr int kB = KvCache::kBlockTokens;

std::vector<int> Tokens(int n, int salt) {
  std::vector<int> t(n);
  for (int i = 0; i < n; ++i) t[i] = (i * 7 + salt * 13) % 1000;
  return t;
}

// What "the model" writes for position p: a function of the scope and every token up to p,
// as attention K/V is. Stored in V's row of the token (layer 0, head 0).
uint32_t Marker(PrefixScope scope, const std::vector<int>& tokens, int p) {
  uint64_t h = 1469598103934665603ULL ^ scope;
  for (int i = 0; i <= p; ++i) h = (h ^ static_cast<uint32_t>(tokens[i])) * 1099511628211ULL;
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// Writes the markers of positions [Length, Length + n) and appends them, as Forward does;
// false when the budget has no room for them.
bool Compute(KvCache& cache, SequenceId id, PrefixScope scope, const std::vector<int>& tokens,
             int n) {
  const int start = cache.Length(id);
  if (!cache.Reserve(id, start + n).ok()) return false;
  std::byte* const* table = cache.BlockTable(id);
  for (int p = start; p < start + n; ++p) {
    const uint32_t m = Marker(scope, tokens, p);
    std::memcpy(table[p / kB] + cache.ElementOffset(0, 1, 0, p % kB) * 4, &m, sizeof(m));
  }
  return cache.Append(id, n).ok();
}

// Whether every stored position of `id` holds what `tokens` under `scope` would produce.
bool HoldsPrefixOf(const KvCache& cache, SequenceId id, PrefixScope scope,
                   const std::vector<int>& tokens) {
  std::byte* const* table = cache.BlockTable(id);
  for (int p = 0; p < cache.Length(id); ++p) {
    uint32_t m;
    std::memcpy(&m, table[p / kB] + cache.ElementOffset(0, 1, 0, p % kB) * 4, sizeof(m));
    if (m != Marker(scope, tokens, p)) return false;
  }
  return true;
}

TEST(KvCachePrefixTest, PublishedBlocksAreSharedWithinTheScopeOnly) {
  KvCache cache(kLayout, 20 * kBlock);
  const std::vector<int> prompt = Tokens(50, 1);
  SequenceId a = cache.NewSequence(/*scope=*/7);
  ASSERT_TRUE(Compute(cache, a, 7, prompt, 50));
  cache.Publish(a, prompt);
  EXPECT_EQ(cache.indexed_blocks(), 3);  // 50 tokens: 3 full blocks, the 4th is partial

  // Same scope, same start: the full blocks are found, capped by max_tokens.
  SequenceId b = cache.NewSequence(7);
  EXPECT_EQ(cache.AttachPrefix(b, prompt, 49), 48);
  EXPECT_EQ(cache.BlockTable(b)[2], cache.BlockTable(a)[2]);
  EXPECT_EQ(cache.shared_blocks(), 3);
  EXPECT_TRUE(HoldsPrefixOf(cache, b, 7, prompt));
  SequenceId capped = cache.NewSequence(7);
  EXPECT_EQ(cache.AttachPrefix(capped, prompt, 47), 32);  // the last prompt token is computed

  // Another scope never sees them.
  SequenceId other = cache.NewSequence(8);
  EXPECT_EQ(cache.AttachPrefix(other, prompt, 49), 0);

  // A prompt that differs inside block 1 shares block 0 only.
  std::vector<int> diverged = prompt;
  diverged[20] += 1;
  SequenceId d = cache.NewSequence(7);
  EXPECT_EQ(cache.AttachPrefix(d, diverged, 49), 16);
  EXPECT_EQ(cache.BytesForTokens(50), 4 * kBlock);
  EXPECT_EQ(cache.bytes_in_use(), 4 * kBlock);  // a's blocks; the others only share them
}

TEST(KvCachePrefixTest, CachedBlocksNeverFailAReserveAndGoTailFirst) {
  KvCache cache(kLayout, 4 * kBlock);
  const std::vector<int> prompt = Tokens(64, 2);
  SequenceId a = cache.NewSequence();
  ASSERT_TRUE(Compute(cache, a, 0, prompt, 64));
  cache.Publish(a, prompt);
  ASSERT_TRUE(cache.Free(a).ok());
  EXPECT_EQ(cache.bytes_in_use(), 0);
  EXPECT_EQ(cache.bytes_cached(), 4 * kBlock);

  // A new sequence needs 2 blocks: the two least recently used (the prefix's tail) go.
  SequenceId b = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(b, 32).ok());
  EXPECT_EQ(cache.evicted_blocks(), 2);
  EXPECT_EQ(cache.bytes_cached(), 2 * kBlock);
  ASSERT_TRUE(cache.Free(b).ok());
  SequenceId c = cache.NewSequence();
  EXPECT_EQ(cache.AttachPrefix(c, prompt, 63), 32);  // the head survived
  EXPECT_TRUE(HoldsPrefixOf(cache, c, 0, prompt));
}

TEST(KvCachePrefixTest, AttachExtendsAReservedSequenceAndGivesItsBlocksBack) {
  KvCache cache(kLayout, 10 * kBlock);
  const std::vector<int> prompt = Tokens(64, 3);
  SequenceId b = cache.NewSequence();
  ASSERT_TRUE(cache.Reserve(b, 64).ok());  // admitted before a published anything
  SequenceId a = cache.NewSequence();
  ASSERT_TRUE(Compute(cache, a, 0, prompt, 64));
  cache.Publish(a, prompt);
  EXPECT_EQ(cache.bytes_in_use(), 8 * kBlock);
  EXPECT_EQ(cache.AttachPrefix(b, prompt, 63), 48);
  EXPECT_EQ(cache.bytes_in_use(), 5 * kBlock);  // b's 3 reserved blocks went back
  EXPECT_EQ(cache.Capacity(b), 64);
  EXPECT_TRUE(HoldsPrefixOf(cache, b, 0, prompt));
}

TEST(KvCachePrefixTest, APrefixComputedTwiceIsHeldOnce) {
  KvCache cache(kLayout, 10 * kBlock);
  const std::vector<int> prompt = Tokens(40, 4);
  SequenceId a = cache.NewSequence();
  SequenceId b = cache.NewSequence();
  ASSERT_TRUE(Compute(cache, a, 0, prompt, 40));
  ASSERT_TRUE(Compute(cache, b, 0, prompt, 40));
  EXPECT_EQ(cache.bytes_in_use(), 6 * kBlock);
  cache.Publish(a, prompt);
  cache.Publish(b, prompt);
  EXPECT_EQ(cache.bytes_in_use(), 4 * kBlock);  // b's two full blocks became a's
  EXPECT_EQ(cache.BlockTable(a)[1], cache.BlockTable(b)[1]);
  EXPECT_NE(cache.BlockTable(a)[2], cache.BlockTable(b)[2]);  // partial blocks stay their own
  EXPECT_TRUE(HoldsPrefixOf(cache, b, 0, prompt));
}

TEST(KvCachePrefixTest, TruncatingIntoASharedBlockCopiesIt) {
  KvCache cache(kLayout, 10 * kBlock);
  const std::vector<int> prompt = Tokens(48, 5);
  SequenceId a = cache.NewSequence();
  ASSERT_TRUE(Compute(cache, a, 0, prompt, 48));
  cache.Publish(a, prompt);
  SequenceId b = cache.NewSequence();
  ASSERT_EQ(cache.AttachPrefix(b, prompt, 48), 48);
  std::byte* shared = cache.BlockTable(b)[1];
  ASSERT_TRUE(cache.Truncate(b, 20).ok());
  EXPECT_EQ(cache.Length(b), 20);
  EXPECT_NE(cache.BlockTable(b)[1], shared);  // b writes position 20 next: its own copy
  EXPECT_EQ(cache.BlockTable(b)[0], cache.BlockTable(a)[0]);
  EXPECT_TRUE(HoldsPrefixOf(cache, b, 0, prompt));
  // b continues differently; a's block is untouched.
  std::vector<int> other = prompt;
  other[20] = 999;
  ASSERT_TRUE(Compute(cache, b, 0, other, 10));
  EXPECT_TRUE(HoldsPrefixOf(cache, a, 0, prompt));
  EXPECT_TRUE(HoldsPrefixOf(cache, b, 0, other));

  // With no room for the copy, the sequence keeps only its whole blocks.
  KvCache tight(kLayout, 3 * kBlock);
  SequenceId x = tight.NewSequence();
  ASSERT_TRUE(Compute(tight, x, 0, prompt, 48));
  tight.Publish(x, prompt);
  SequenceId y = tight.NewSequence();
  ASSERT_EQ(tight.AttachPrefix(y, prompt, 48), 48);
  ASSERT_TRUE(tight.Truncate(y, 20).ok());
  EXPECT_EQ(tight.Length(y), 16);
  EXPECT_TRUE(HoldsPrefixOf(tight, y, 0, prompt));
}

TEST(KvCachePrefixTest, BytesFreedByDroppingCountsOnlyBlocksNobodyElseHolds) {
  KvCache cache(kLayout, 10 * kBlock);
  const std::vector<int> prompt = Tokens(40, 6);
  SequenceId a = cache.NewSequence();
  ASSERT_TRUE(Compute(cache, a, 0, prompt, 40));
  cache.Publish(a, prompt);
  SequenceId b = cache.NewSequence();
  ASSERT_EQ(cache.AttachPrefix(b, prompt, 39), 32);
  ASSERT_TRUE(cache.Reserve(b, 40).ok());
  const SequenceId just_a[] = {a};
  const SequenceId both[] = {a, b};
  EXPECT_EQ(cache.BytesFreedByDropping(just_a), kBlock);  // its partial block only
  EXPECT_EQ(cache.BytesFreedByDropping(both), 4 * kBlock);
}

// Random request streams against a reference model: every live sequence holds exactly the
// K/V its own tokens produce (so no hit ever served another prefix and no referenced block
// was reused), referenced memory is what the live sequences hold, and the budget bounds
// referenced and cached memory together.
// Odd seeds add a disk tier and restarts: the cache is written out (or, as after a crash,
// not), every live sequence is lost, a new cache opens the same directory, and sometimes a
// block file is damaged in between. What the reference model demands does not change.
TEST(KvCachePrefixTest, RandomStreamsMatchTheReferenceModel) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int budget_blocks = uniform(12, 60);
    const bool tiered = seed % 2 == 1;
    std::string dir;
    if (tiered) {
      std::string pattern =
          (std::filesystem::path(::testing::TempDir()) / "kvprop-XXXXXX").string();
      ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
      dir = pattern;
    }
    auto open_cache = [&]() {
      auto cache = std::make_unique<KvCache>(kLayout, budget_blocks * kBlock);
      if (tiered) {
        // Sometimes a limit below what the streams write: files come and go.
        absl::StatusOr<std::unique_ptr<KvDiskTier>> tier = KvDiskTier::Open(
            {.dir = dir,
             .max_bytes = uniform(0, 1) == 0 ? (int64_t{1} << 30) : 20 * (kBlock + 136),
             .name_space = BlockKey{.lo = 1, .hi = 2},
             .block_bytes = kBlock,
             .warn = nullptr});
        EXPECT_TRUE(tier.ok()) << tier.status();
        cache->AttachDiskTier(*std::move(tier));
      }
      return cache;
    };
    std::unique_ptr<KvCache> owned = open_cache();
    int64_t disk_reads = 0;
    std::vector<std::vector<int>> bases;
    for (int c = 0; c < 3; ++c)
      bases.push_back(Tokens(uniform(20, 70), static_cast<int>(seed) * 5 + c));
    struct Live {
      SequenceId id;
      PrefixScope scope;
      std::vector<int> tokens;  // everything it will ever hold
    };
    std::vector<Live> live;
    int hits = 0;
    for (int op = 0; op < 400; ++op) {
      KvCache& cache = *owned;
      const int kind = uniform(0, tiered ? 10 : 9);
      if (kind == 10) {                               // a restart
        if (uniform(0, 3) != 0) cache.SpillToDisk();  // a drain; else a crash
        disk_reads += cache.disk_tier()->stats().reads;
        live.clear();
        owned.reset();
        std::vector<std::filesystem::path> files;
        for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
          if (e.is_regular_file()) files.push_back(e.path());
        }
        if (!files.empty() && uniform(0, 1) == 0) {  // a damaged file
          const auto& victim = files[uniform(0, static_cast<int>(files.size()) - 1)];
          if (uniform(0, 1) == 0) {
            std::filesystem::resize_file(victim, uniform(0, 600));
          } else {
            std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(uniform(0, 600));
            f.put(static_cast<char>(uniform(0, 255)));
          }
        }
        owned = open_cache();
        continue;
      }
      if (kind <= 1 || live.empty()) {  // a request arrives
        Live r{0, static_cast<PrefixScope>(uniform(1, 2)), bases[uniform(0, 2)]};
        r.tokens.resize(r.tokens.size() * uniform(1, 3) / 2 + 1, 0);
        // The same base up to a random point, then the conversation's own tokens.
        for (size_t i = uniform(0, static_cast<int>(r.tokens.size())); i < r.tokens.size(); ++i) {
          if (uniform(0, 3) == 0) r.tokens[i] = uniform(0, 5);
        }
        r.id = cache.NewSequence(r.scope);
        const int prompt = static_cast<int>(r.tokens.size());
        hits += cache.AttachPrefix(r.id, r.tokens, prompt - 1);
        ASSERT_TRUE(HoldsPrefixOf(cache, r.id, r.scope, r.tokens)) << "seed " << seed;
        r.tokens.resize(prompt + uniform(0, 20), 3);
        if (!cache.Reserve(r.id, static_cast<int>(r.tokens.size())).ok()) {
          ASSERT_TRUE(cache.Free(r.id).ok());
          continue;
        }
        live.push_back(std::move(r));
      } else {
        Live& r = live[uniform(0, static_cast<int>(live.size()) - 1)];
        const int length = cache.Length(r.id);
        if (kind <= 5 && length < static_cast<int>(r.tokens.size())) {  // a forward pass
          (void)Compute(cache, r.id, r.scope, r.tokens,
                        std::min(uniform(1, 20), static_cast<int>(r.tokens.size()) - length));
          if (uniform(0, 1) == 0) cache.Publish(r.id, r.tokens);
        } else if (kind == 6) {  // the session is cut back
          ASSERT_TRUE(cache.Truncate(r.id, uniform(0, length)).ok());
          // and goes on differently (a new turn), writing into its last block again.
          for (size_t i = cache.Length(r.id); i < r.tokens.size(); ++i) r.tokens[i] = uniform(6, 9);
        } else if (kind == 7) {  // forked
          absl::StatusOr<SequenceId> f = cache.Fork(r.id, uniform(0, length));
          if (f.ok()) {
            Live copy{*f, r.scope, r.tokens};
            live.push_back(std::move(copy));
          }
        } else {  // finished
          cache.Publish(r.id, r.tokens);
          ASSERT_TRUE(cache.Free(r.id).ok());
          r = std::move(live.back());
          live.pop_back();
        }
      }
      std::set<std::byte*> held;
      for (const Live& r : live) {
        ASSERT_TRUE(HoldsPrefixOf(cache, r.id, r.scope, r.tokens))
            << "seed " << seed << " op " << op;
        for (int b = 0; b < cache.Capacity(r.id) / kB; ++b) held.insert(cache.BlockTable(r.id)[b]);
      }
      ASSERT_EQ(cache.bytes_in_use(), static_cast<int64_t>(held.size()) * kBlock)
          << "seed " << seed;
      ASSERT_LE(cache.bytes_in_use() + cache.bytes_cached(), cache.budget_bytes());
    }
    EXPECT_GT(hits, 0) << "seed " << seed << " never reused a prefix: the test exercised nothing";
    if (tiered) {
      disk_reads += owned->disk_tier()->stats().reads;
      EXPECT_GT(disk_reads, 0) << "seed " << seed << " never read a block back from disk";
      owned.reset();
      std::filesystem::remove_all(dir);
    }
  }
}

}  // namespace
}  // namespace textgen::model
