// The disk tier of the KV cache: the block file format refuses every damaged file, the
// directory is content-addressed, namespaced, size-limited and shareable, and a KV cache
// with the tier gets evicted and drained blocks back bitwise, across a "restart".
#include "model/runtime/kv_disk_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/runtime/kv_block_file.h"
#include "model/runtime/kv_cache.h"

namespace textgen::model {
namespace {

namespace fs = std::filesystem;

// 1 layer, 1 kv head of 4 floats: a block is 16 * 2 * 4 * 4 = 512 bytes.
constexpr KvCacheLayout kLayout{
    .n_layers = 1, .n_kv_heads = 1, .head_dim = 4, .bytes_per_element = 4};
constexpr int64_t kBlock = 512;
constexpr int kB = KvCache::kBlockTokens;
constexpr int64_t kFileBytes = kKvBlockFileHeaderBytes + kBlock + kKvBlockFileTrailerBytes;
constexpr BlockKey kNamespace{.lo = 0x1234, .hi = 0x5678};

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::path(::testing::TempDir()) / "kvdisk-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

BlockRecord RecordFor(const BlockKey& parent, int salt) {
  BlockRecord r;
  r.parent = parent;
  for (int i = 0; i < kB; ++i) r.tokens[i] = salt * 100 + i;
  r.key = ChainBlockKey(r.parent, r.tokens);
  return r;
}

std::vector<std::byte> Payload(int salt) {
  std::vector<std::byte> p(kBlock);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::byte>((i * 31 + salt) & 0xff);
  return p;
}

// `warnings`, when given, collects the lines the tier reports.
std::unique_ptr<KvDiskTier> OpenTier(const std::string& dir, int64_t max_bytes = 1 << 30,
                                     BlockKey name_space = kNamespace,
                                     std::vector<std::string>* warnings = nullptr) {
  std::function<void(std::string_view)> warn;
  if (warnings != nullptr) {
    warn = [warnings](std::string_view line) { warnings->emplace_back(line); };
  }
  absl::StatusOr<std::unique_ptr<KvDiskTier>> tier = KvDiskTier::Open({.dir = dir,
                                                                       .max_bytes = max_bytes,
                                                                       .name_space = name_space,
                                                                       .block_bytes = kBlock,
                                                                       .warn = std::move(warn)});
  EXPECT_TRUE(tier.ok()) << tier.status();
  return tier.ok() ? *std::move(tier) : nullptr;
}

// Every block file under `dir`.
std::vector<fs::path> BlockFiles(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".kvb") files.push_back(entry);
  }
  return files;
}

// The block file named for `key` under `dir`; empty when there is none.
fs::path FileOf(const std::string& dir, const BlockKey& key) {
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(key.hi),
                static_cast<unsigned long long>(key.lo));
  for (const fs::path& p : BlockFiles(dir)) {
    if (p.stem() == hex) return p;
  }
  return fs::path();
}

std::vector<std::byte> FileBytes(const BlockKey& ns, const BlockRecord& r,
                                 const std::vector<std::byte>& payload) {
  const KvBlockFileHeader header = EncodeKvBlockHeader(ns, r, payload.size());
  const uint64_t checksum = KvBlockFileChecksum(header, payload);
  std::vector<std::byte> file(header.begin(), header.end());
  file.insert(file.end(), payload.begin(), payload.end());
  const auto* c = reinterpret_cast<const std::byte*>(&checksum);
  file.insert(file.end(), c, c + sizeof(checksum));
  return file;
}

TEST(KvBlockFileTest, AGoodFileVerifiesAndEveryDamagedOneIsRefused) {
  const BlockRecord r = RecordFor(RootBlockKey(7), 1);
  const std::vector<std::byte> file = FileBytes(kNamespace, r, Payload(1));
  absl::StatusOr<BlockRecord> good = VerifyKvBlockFileBytes(file, kNamespace, kBlock);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->key, r.key);
  EXPECT_EQ(good->tokens, r.tokens);
  // Any one bit flipped anywhere: refused.
  for (size_t i = 0; i < file.size(); ++i) {
    std::vector<std::byte> bad = file;
    bad[i] ^= std::byte{0x10};
    EXPECT_TRUE(absl::IsDataLoss(VerifyKvBlockFileBytes(bad, kNamespace, kBlock).status()))
        << "byte " << i;
  }
  // Truncated at any length, or grown: refused.
  for (size_t n = 0; n < file.size(); n += 7) {
    EXPECT_FALSE(VerifyKvBlockFileBytes(std::span(file).first(n), kNamespace, kBlock).ok()) << n;
  }
  std::vector<std::byte> longer = file;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(VerifyKvBlockFileBytes(longer, kNamespace, kBlock).ok());
  // Another model's namespace, or another block size: refused.
  EXPECT_FALSE(VerifyKvBlockFileBytes(file, BlockKey{.lo = 1, .hi = 2}, kBlock).ok());
  EXPECT_FALSE(VerifyKvBlockFileBytes(file, kNamespace, kBlock - 4).ok());
}

TEST(KvBlockFileTest, AFileHoldingAnotherBlockThanAskedForIsRefused) {
  const BlockRecord r = RecordFor(RootBlockKey(7), 1);
  const std::vector<std::byte> payload = Payload(1);
  const KvBlockFileHeader header = EncodeKvBlockHeader(kNamespace, r, payload.size());
  const uint64_t checksum = KvBlockFileChecksum(header, payload);
  EXPECT_TRUE(VerifyKvBlockFile(header, payload, checksum, kNamespace, &r).ok());
  const BlockRecord other = RecordFor(RootBlockKey(7), 2);
  EXPECT_TRUE(
      absl::IsDataLoss(VerifyKvBlockFile(header, payload, checksum, kNamespace, &other).status()));
}

TEST(KvDiskTierTest, AStoredBlockLoadsBitwiseAndAnUnknownOneMisses) {
  TempDir dir;
  std::unique_ptr<KvDiskTier> tier = OpenTier(dir.path());
  ASSERT_NE(tier, nullptr);
  const BlockRecord r = RecordFor(RootBlockKey(1), 1);
  const std::vector<std::byte> payload = Payload(3);
  EXPECT_TRUE(tier->Store(r, payload));
  EXPECT_FALSE(tier->Store(r, payload)) << "written twice";
  std::vector<std::byte> out(kBlock);
  ASSERT_TRUE(tier->Load(r, out));
  EXPECT_EQ(out, payload);
  EXPECT_FALSE(tier->Load(RecordFor(RootBlockKey(1), 2), out));
  EXPECT_EQ(tier->stats().writes, 1);
  EXPECT_EQ(tier->stats().reads, 1);
  EXPECT_EQ(tier->stats().files, 1);
  EXPECT_EQ(tier->stats().bytes, kFileBytes);
  EXPECT_EQ(tier->stats().rejected, 0);
  // The next process sees it: counted at open, and loadable.
  std::unique_ptr<KvDiskTier> again = OpenTier(dir.path());
  EXPECT_EQ(again->stats().files, 1);
  std::vector<std::byte> out2(kBlock);
  ASSERT_TRUE(again->Load(r, out2));
  EXPECT_EQ(out2, payload);
}

TEST(KvDiskTierTest, DamagedFilesAreRefusedReportedAndRemoved) {
  TempDir dir;
  std::vector<std::string> warnings;
  std::unique_ptr<KvDiskTier> opened = OpenTier(dir.path(), 1 << 30, kNamespace, &warnings);
  ASSERT_NE(opened, nullptr);
  KvDiskTier& tier = *opened;
  std::vector<BlockRecord> records;
  for (int i = 0; i < 3; ++i) {
    records.push_back(RecordFor(RootBlockKey(1), i));
    ASSERT_TRUE(tier.Store(records.back(), Payload(i)));
  }
  auto path_of = [&](const BlockRecord& r) { return FileOf(dir.path(), r.key); };
  // Corrupted: one payload byte changed in place.
  {
    std::fstream f(path_of(records[0]), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(kKvBlockFileHeaderBytes + 100);
    f.put('\x7f');
  }
  // Truncated (a torn write that a rename would never expose, but a disk can).
  fs::resize_file(path_of(records[1]), kFileBytes - 9);
  std::vector<std::byte> out(kBlock);
  EXPECT_FALSE(tier.Load(records[0], out));
  EXPECT_FALSE(tier.Load(records[1], out));
  EXPECT_EQ(tier.stats().rejected, 2);
  EXPECT_EQ(warnings.size(), 2u);
  EXPECT_TRUE(path_of(records[0]).empty()) << "a refused file must be removed";
  EXPECT_TRUE(path_of(records[1]).empty());
  ASSERT_TRUE(tier.Load(records[2], out));
  EXPECT_EQ(out, Payload(2));
  // A file renamed to another key's name: refused (it holds another block).
  const BlockRecord wanted = RecordFor(RootBlockKey(1), 9);
  ASSERT_TRUE(tier.Store(wanted, Payload(9)));
  const fs::path wanted_path = path_of(wanted);
  fs::copy_file(path_of(records[2]), wanted_path, fs::copy_options::overwrite_existing);
  EXPECT_FALSE(tier.Load(wanted, out));
  EXPECT_EQ(tier.stats().rejected, 3);
}

TEST(KvDiskTierTest, AFailingDiskIsCountedAndReportedWithoutFlooding) {
  TempDir dir;
  std::vector<std::string> warnings;
  std::unique_ptr<KvDiskTier> opened = OpenTier(dir.path(), 1 << 30, kNamespace, &warnings);
  ASSERT_NE(opened, nullptr);
  KvDiskTier& tier = *opened;
  // The directory goes away under the server and a file takes its name: every write fails.
  fs::remove_all(tier.directory());
  std::ofstream(tier.directory()) << "x";
  for (int i = 0; i < 1500; ++i)
    EXPECT_FALSE(tier.Store(RecordFor(RootBlockKey(1), i), Payload(i)));
  EXPECT_EQ(tier.stats().errors, 1500);
  EXPECT_EQ(tier.stats().writes, 0);
  ASSERT_EQ(warnings.size(), 2u) << "the first error and the 1001st";
  EXPECT_NE(warnings[1].find("1001 file system errors"), std::string::npos) << warnings[1];
  std::vector<std::byte> out(kBlock);
  EXPECT_FALSE(tier.Load(RecordFor(RootBlockKey(1), 0), out));
}

TEST(KvDiskTierTest, AnotherNamespaceNeverSeesTheBlocks) {
  TempDir dir;
  std::unique_ptr<KvDiskTier> a = OpenTier(dir.path());
  std::unique_ptr<KvDiskTier> b = OpenTier(dir.path(), 1 << 30, BlockKey{.lo = 9, .hi = 9});
  const BlockRecord r = RecordFor(RootBlockKey(1), 1);
  ASSERT_TRUE(a->Store(r, Payload(1)));
  std::vector<std::byte> out(kBlock);
  EXPECT_FALSE(b->Load(r, out));
  EXPECT_EQ(b->stats().files, 0);
  EXPECT_NE(a->directory(), b->directory());
}

TEST(KvDiskTierTest, TheNamespaceFollowsTheModelBytesAndTheKvType) {
  TempDir dir;
  const std::string model_a = dir.path() + "/a.gguf";
  const std::string model_b = dir.path() + "/b.gguf";
  std::ofstream(model_a) << "GGUF model weights 0";
  std::ofstream(model_b) << "GGUF model weights 1";
  absl::StatusOr<BlockKey> a32 = KvDiskNamespace(model_a, kLayout, "f32");
  absl::StatusOr<BlockKey> a32_again = KvDiskNamespace(model_a, kLayout, "f32");
  absl::StatusOr<BlockKey> a16 = KvDiskNamespace(model_a, kLayout, "f16");
  absl::StatusOr<BlockKey> b32 = KvDiskNamespace(model_b, kLayout, "f32");
  KvCacheLayout wider = kLayout;
  wider.head_dim = 8;
  absl::StatusOr<BlockKey> a32_wider = KvDiskNamespace(model_a, wider, "f32");
  ASSERT_TRUE(a32.ok() && a32_again.ok() && a16.ok() && b32.ok() && a32_wider.ok());
  EXPECT_EQ(*a32, *a32_again);
  EXPECT_NE(*a32, *a16);
  EXPECT_NE(*a32, *b32);
  EXPECT_NE(*a32, *a32_wider);
  EXPECT_TRUE(absl::IsNotFound(KvDiskNamespace(dir.path() + "/none", kLayout, "f32").status()));
}

TEST(KvDiskTierTest, TheSizeLimitRemovesTheLeastRecentlyUsedFirst) {
  TempDir dir;
  // Room for 4.5 files: the fifth write trims to 90% (4 files), oldest first.
  std::unique_ptr<KvDiskTier> tier = OpenTier(dir.path(), kFileBytes * 9 / 2);
  std::vector<BlockRecord> records;
  for (int i = 0; i < 4; ++i) {
    records.push_back(RecordFor(RootBlockKey(1), i));
    ASSERT_TRUE(tier->Store(records.back(), Payload(i)));
  }
  // Age them: file i last used 100 - i seconds ago.
  const std::vector<fs::path> files = BlockFiles(dir.path());
  ASSERT_EQ(files.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    timespec times[2];
    times[0].tv_sec = times[1].tv_sec = ::time(nullptr) - 100 + i;
    times[0].tv_nsec = times[1].tv_nsec = 0;
    ASSERT_EQ(::utimensat(AT_FDCWD, FileOf(dir.path(), records[i].key).c_str(), times, 0), 0);
  }
  std::vector<std::byte> out(kBlock);
  ASSERT_TRUE(tier->Load(records[0], out));  // the oldest is used again: now the newest
  ASSERT_TRUE(tier->Store(RecordFor(RootBlockKey(1), 4), Payload(4)));
  EXPECT_EQ(tier->stats().evicted, 1);
  EXPECT_EQ(tier->stats().files, 4);
  EXPECT_LE(tier->stats().bytes, kFileBytes * 9 / 2);
  EXPECT_FALSE(tier->Load(records[1], out)) << "the least recently used must have gone";
  EXPECT_TRUE(tier->Load(records[0], out));
  EXPECT_TRUE(tier->Load(records[2], out));
}

TEST(KvDiskTierTest, OpenRemovesTemporaryFilesOfDeadWritersOnly) {
  TempDir dir;
  std::unique_ptr<KvDiskTier> tier = OpenTier(dir.path());
  const fs::path shard = fs::path(tier->directory()) / "ab";
  fs::create_directories(shard);
  std::ofstream(shard / ".tmp-1-0-dead") << "x";
  std::ofstream(shard / ".tmp-2-0-live") << "x";
  timespec old[2] = {{::time(nullptr) - 7200, 0}, {::time(nullptr) - 7200, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (shard / ".tmp-1-0-dead").c_str(), old, 0), 0);
  tier.reset();
  tier = OpenTier(dir.path());
  EXPECT_FALSE(fs::exists(shard / ".tmp-1-0-dead"));
  EXPECT_TRUE(fs::exists(shard / ".tmp-2-0-live")) << "another writer may be using it";
}

TEST(KvDiskTierTest, AnUnwritableDirectoryFailsOpenWithItsName) {
  TempDir dir;
  const std::string file = dir.path() + "/plain-file";
  std::ofstream(file) << "x";
  absl::StatusOr<std::unique_ptr<KvDiskTier>> tier = KvDiskTier::Open({.dir = file,
                                                                       .max_bytes = 1 << 20,
                                                                       .name_space = kNamespace,
                                                                       .block_bytes = kBlock,
                                                                       .warn = nullptr});
  ASSERT_FALSE(tier.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(tier.status())) << tier.status();
  EXPECT_NE(tier.status().message().find("plain-file"), std::string::npos) << tier.status();
}

// ---- The KV cache with a disk tier ----

// Fills positions [Length, Length + n) with a function of the tokens up to each, as the model
// would, and appends them.
bool Compute(KvCache& cache, SequenceId id, const std::vector<int>& tokens, int n) {
  const int start = cache.Length(id);
  if (!cache.Reserve(id, start + n).ok()) return false;
  std::byte* const* table = cache.BlockTable(id);
  for (int p = start; p < start + n; ++p) {
    uint32_t m = 2166136261u;
    for (int i = 0; i <= p; ++i) m = (m ^ static_cast<uint32_t>(tokens[i])) * 16777619u;
    for (int e = 0; e < 8; ++e) {  // K and V of the token, every element
      std::memcpy(table[p / kB] + (cache.ElementOffset(0, e / 4, 0, 0) + (p % kB) * 4 + e % 4) * 4,
                  &m, 4);
      m = m * 747796405u + 2891336453u;
    }
  }
  return cache.Append(id, n).ok();
}

std::vector<std::byte> Contents(const KvCache& cache, SequenceId id) {
  std::vector<std::byte> bytes;
  std::byte* const* table = cache.BlockTable(id);
  for (int b = 0; b < cache.Length(id) / kB; ++b) {
    bytes.insert(bytes.end(), table[b], table[b] + cache.block_bytes());
  }
  return bytes;
}

std::vector<int> Prompt(int n, int salt) {
  std::vector<int> t(n);
  for (int i = 0; i < n; ++i) t[i] = (i * 11 + salt * 17) % 5000;
  return t;
}

TEST(KvCacheDiskTest, EvictedBlocksComeBackFromDiskBitwise) {
  TempDir dir;
  KvCache cache(kLayout, 8 * kBlock);
  const std::vector<int> a = Prompt(4 * kB + 3, 1);
  SequenceId first = cache.NewSequence(5);
  ASSERT_TRUE(Compute(cache, first, a, static_cast<int>(a.size())));
  cache.Publish(first, a);
  const std::vector<std::byte> computed = Contents(cache, first);
  ASSERT_TRUE(cache.Free(first).ok());
  // Attached after a's blocks were published (so not written then, as when that write
  // failed): eviction is what writes them.
  cache.AttachDiskTier(OpenTier(dir.path()));
  // Another prompt takes the whole budget: a's four cached blocks are evicted to disk.
  const std::vector<int> b = Prompt(8 * kB, 2);
  SequenceId other = cache.NewSequence(5);
  ASSERT_TRUE(Compute(cache, other, b, static_cast<int>(b.size())));
  EXPECT_EQ(cache.evicted_blocks(), 4);
  EXPECT_EQ(cache.disk_tier()->stats().writes, 4);
  ASSERT_TRUE(cache.Free(other).ok());
  // a again: its prefix comes back from disk, byte for byte.
  SequenceId again = cache.NewSequence(5);
  EXPECT_EQ(cache.AttachPrefix(again, a, static_cast<int>(a.size()) - 1), 4 * kB);
  EXPECT_EQ(Contents(cache, again), computed);
  EXPECT_EQ(cache.disk_tier()->stats().reads, 4);
  // Another scope never finds them.
  SequenceId stranger = cache.NewSequence(6);
  EXPECT_EQ(cache.AttachPrefix(stranger, a, static_cast<int>(a.size()) - 1), 0);
}

TEST(KvCacheDiskTest, PublishedBlocksAreOnDiskAtOnceAndTheDrainWritesTheRest) {
  TempDir dir;
  const std::vector<int> a = Prompt(10 * kB, 1);
  const std::vector<int> b = Prompt(3 * kB, 2);
  KvCache cache(kLayout, 64 * kBlock);
  SequenceId early = cache.NewSequence(1);  // published before the tier existed
  ASSERT_TRUE(Compute(cache, early, b, static_cast<int>(b.size())));
  cache.Publish(early, b);
  cache.AttachDiskTier(OpenTier(dir.path()));
  SequenceId id = cache.NewSequence(1);
  ASSERT_TRUE(Compute(cache, id, a, static_cast<int>(a.size())));
  cache.Publish(id, a);
  EXPECT_EQ(cache.disk_tier()->stats().writes, 10) << "written when published (crash-safe)";
  EXPECT_EQ(cache.SpillToDisk(), 3) << "the drain writes what is not on disk yet";
  EXPECT_EQ(cache.SpillToDisk(), 0) << "written once";
  EXPECT_EQ(BlockFiles(dir.path()).size(), 13u);
}

TEST(KvCacheDiskTest, ARestartContinuesFromWhatWasWritten) {
  TempDir dir;
  const std::vector<int> a = Prompt(10 * kB, 1);
  std::vector<std::byte> computed;
  {
    KvCache cache(kLayout, 64 * kBlock);
    cache.AttachDiskTier(OpenTier(dir.path()));
    SequenceId id = cache.NewSequence(ScopeOfPrincipal("alice"));
    ASSERT_TRUE(Compute(cache, id, a, static_cast<int>(a.size())));
    cache.Publish(id, a);
    computed = Contents(cache, id);
    ASSERT_TRUE(cache.Free(id).ok());
  }
  KvCache restarted(kLayout, 64 * kBlock);
  restarted.AttachDiskTier(OpenTier(dir.path()));
  EXPECT_EQ(restarted.disk_tier()->stats().files, 10);
  SequenceId id = restarted.NewSequence(ScopeOfPrincipal("alice"));
  // The last prompt token is always computed: 9 whole blocks can come from the cache.
  EXPECT_EQ(restarted.AttachPrefix(id, a, static_cast<int>(a.size()) - 1), 9 * kB);
  computed.resize(9 * kBlock);
  EXPECT_EQ(Contents(restarted, id), computed);
  // Loaded blocks are indexed again: a second request shares them from memory.
  SequenceId twin = restarted.NewSequence(ScopeOfPrincipal("alice"));
  EXPECT_EQ(restarted.AttachPrefix(twin, a, static_cast<int>(a.size()) - 1), 9 * kB);
  EXPECT_EQ(restarted.disk_tier()->stats().reads, 9);
  EXPECT_EQ(restarted.bytes_in_use(), 9 * kBlock);
  SequenceId bob = restarted.NewSequence(ScopeOfPrincipal("bob"));
  EXPECT_EQ(restarted.AttachPrefix(bob, a, static_cast<int>(a.size()) - 1), 0);
}

// A prefix the directory does not hold costs nothing: no cached block is evicted to make room
// for a read that misses.
TEST(KvCacheDiskTest, ADiskMissEvictsNothing) {
  TempDir dir;
  KvCache cache(kLayout, 4 * kBlock);
  cache.AttachDiskTier(OpenTier(dir.path()));
  const std::vector<int> a = Prompt(4 * kB, 1);
  SequenceId first = cache.NewSequence(1);
  ASSERT_TRUE(Compute(cache, first, a, static_cast<int>(a.size())));
  cache.Publish(first, a);
  ASSERT_TRUE(cache.Free(first).ok());  // the whole budget is cached now
  const std::vector<int> b = Prompt(4 * kB, 2);
  SequenceId other = cache.NewSequence(1);
  EXPECT_EQ(cache.AttachPrefix(other, b, static_cast<int>(b.size()) - 1), 0);
  EXPECT_EQ(cache.evicted_blocks(), 0);
  SequenceId again = cache.NewSequence(1);
  EXPECT_EQ(cache.AttachPrefix(again, a, static_cast<int>(a.size()) - 1), 3 * kB);
}

TEST(KvCacheDiskTest, LoadingFromDiskStaysWithinTheBudgetAndUsesReservedBlocks) {
  TempDir dir;
  const std::vector<int> a = Prompt(6 * kB, 1);
  {
    KvCache cache(kLayout, 16 * kBlock);
    cache.AttachDiskTier(OpenTier(dir.path()));
    SequenceId id = cache.NewSequence(1);
    ASSERT_TRUE(Compute(cache, id, a, static_cast<int>(a.size())));
    cache.Publish(id, a);
    ASSERT_TRUE(cache.Free(id).ok());
    cache.SpillToDisk();
  }
  KvCache small(kLayout, 4 * kBlock);
  small.AttachDiskTier(OpenTier(dir.path()));
  SequenceId held = small.NewSequence(2);
  ASSERT_TRUE(small.Reserve(held, kB).ok());  // one block taken by another request
  SequenceId id = small.NewSequence(1);
  ASSERT_TRUE(small.Reserve(id, 2 * kB).ok());  // two reserved, empty blocks
  // Two blocks go into the reserved ones, one more fits the budget, then it stops.
  EXPECT_EQ(small.AttachPrefix(id, a, static_cast<int>(a.size()) - 1), 3 * kB);
  EXPECT_EQ(small.bytes_in_use(), 4 * kBlock);
  EXPECT_EQ(small.disk_tier()->stats().reads, 3);
}

}  // namespace
}  // namespace textgen::model
