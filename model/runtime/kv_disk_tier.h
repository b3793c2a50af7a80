#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "model/runtime/prefix_index.h"

namespace textgen::model {

struct KvCacheLayout;

// The namespace of a KV cache directory's blocks: the model file's content (XXH3-128 of every
// byte), the KV layout and its data type. K/V made by another model, another layout or
// another data type is never found. Reads the whole file once (~0.1 s per GB from the page
// cache).
absl::StatusOr<BlockKey> KvDiskNamespace(const std::string& model_path, const KvCacheLayout& layout,
                                         std::string_view kv_dtype);

// The namespace of a hybrid model's state snapshots beside the blocks of `blocks` (from
// KvDiskNamespace: the model file is not read again), for states of `state_bytes`.
BlockKey KvStateNamespace(const BlockKey& blocks, int64_t state_bytes);

struct KvDiskTierOptions {
  std::string dir;          // created if missing; may be shared by several processes
  int64_t max_bytes = 0;    // the directory's size limit (least recently used go first)
  BlockKey name_space;      // KvDiskNamespace
  int64_t block_bytes = 0;  // KvCache::block_bytes()
  // Called with a line a person should read (a refused file, a failed write).
  std::function<void(std::string_view)> warn;
};

struct KvDiskTierStats {
  int64_t files = 0;  // block files of this namespace (as last counted: others may add)
  int64_t bytes = 0;
  int64_t reads = 0;  // blocks served from disk
  int64_t read_bytes = 0;
  int64_t writes = 0;  // blocks written
  int64_t written_bytes = 0;
  int64_t evicted = 0;   // files removed for the size limit
  int64_t rejected = 0;  // files refused (torn, truncated, corrupted, foreign)
  int64_t errors = 0;    // reads or writes the file system failed
};

// KV blocks kept on disk, content-addressed: <dir>/<namespace>/<2 hex>/<key>.kvb, one file
// per block in the format of kv_block_file.h. The cache spills blocks it evicts here, writes
// what it holds on drain, and loads a block back when a prefix continues past what memory
// holds, so a restart (or another replica sharing the directory) finds its conversations.
//
// Safe to share between processes and machines (NFS, a ReadWriteMany volume): a file is
// written under a private temporary name and renamed into place (readers see all of it or
// none; two writers of one key write the same bytes), every read is verified in full, and a
// file deleted while read is simply a miss. The size limit is enforced by whichever
// process finds the directory over it, oldest modification time first; a read refreshes
// the time, so it is least recently used across every process sharing the directory.
//
// Synchronous, engine thread only: a block is 16 tokens (0.5 MiB for a 1B model in f16),
// read or written in well under a millisecond from the page cache.
class KvDiskTier {
 public:
  // Creates the namespace directory, counts what it holds, removes temporary files left
  // by writers that died (older than an hour). FAILED_PRECONDITION when the directory cannot
  // be created or written.
  static absl::StatusOr<std::unique_ptr<KvDiskTier>> Open(KvDiskTierOptions options);
  ~KvDiskTier();

  // Keeps the block `record` names, holding `data` (block_bytes). Skipped when this process
  // knows the file exists. Failures are counted and reported, never fatal. Returns whether
  // a file was written.
  bool Store(const BlockRecord& record, std::span<const std::byte> data);
  // Reads the block `expected` names into the memory `destination` gives (block_bytes),
  // asked for only once the file is open: a miss costs the caller no memory, and an empty span
  // declines. False on a miss, a decline, and a file that does not verify (which is reported
  // and removed).
  bool Load(const BlockRecord& expected, absl::FunctionRef<std::span<std::byte>()> destination);
  bool Load(const BlockRecord& expected, std::span<std::byte> out) {
    return Load(expected, [out] { return out; });
  }
  // Whether this process knows the block's file exists.
  bool Knows(const BlockKey& key) const { return known_.contains(key); }

  const KvDiskTierStats& stats() const { return stats_; }
  const std::string& directory() const { return ns_dir_; }

 private:
  explicit KvDiskTier(KvDiskTierOptions options, std::string ns_dir);
  std::string PathOf(const BlockKey& key) const;
  void Warn(std::string_view message) const;
  // Counts a failed read or write and reports it (not every one: see the .cc).
  void Error(const std::string& message);
  // Counts the namespace's files (and removes stale temporary ones); with `limit` >= 0 also
  // removes the oldest until at most `limit` bytes remain.
  void Scan(int64_t limit);

  KvDiskTierOptions options_;
  std::string ns_dir_;
  uint64_t temp_serial_ = 0;
  absl::flat_hash_set<BlockKey> known_;  // files written or read by this process
  KvDiskTierStats stats_;
};

}  // namespace textgen::model
