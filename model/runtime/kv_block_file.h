#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/runtime/prefix_index.h"

namespace textgen::model {

// The on-disk form of one KV block: a fixed header naming what it holds, the block's bytes
// exactly as the cache keeps them, and a checksum over both.
//
//   offset  size  field (little-endian)
//        0     8  magic "TGKVBLK1" (the format's version is its last byte)
//        8     4  payload bytes (the cache's block size)
//       12     4  zero
//       16    16  namespace: model file identity, KV layout and data type (KvDiskNamespace)
//       32    16  the block's content key (BlockKey: lo, hi)
//       48    16  the content key of the prefix before it
//       64    64  its 16 tokens (int32)
//      128     n  payload
//    128+n     8  XXH3-64 of bytes [0, 128+n)
//
// A file is used only when every field checks: magic, size, namespace, the key it is
// looked up by, key == ChainBlockKey(parent, tokens), and the checksum. So a torn,
// truncated, corrupted, misnamed or foreign file is refused, never served.
inline constexpr size_t kKvBlockFileHeaderBytes = 128;
inline constexpr size_t kKvBlockFileTrailerBytes = 8;

using KvBlockFileHeader = std::array<std::byte, kKvBlockFileHeaderBytes>;

// The header of the file that keeps `record`'s block of `payload_bytes` under `name_space`.
KvBlockFileHeader EncodeKvBlockHeader(const BlockKey& name_space, const BlockRecord& record,
                                      size_t payload_bytes);
// The trailer checksum of a file made of `header` and `payload`.
uint64_t KvBlockFileChecksum(std::span<const std::byte> header, std::span<const std::byte> payload);

// Checks a file read as `header`, `payload` and `checksum` (the trailer) against what the
// reader expects: its namespace and payload size, and the record it looked up (when
// `expected` is given). Returns the record the file holds; DATA_LOSS naming the first field
// that does not check.
absl::StatusOr<BlockRecord> VerifyKvBlockFile(std::span<const std::byte> header,
                                              std::span<const std::byte> payload, uint64_t checksum,
                                              const BlockKey& name_space,
                                              const BlockRecord* expected);

// Checks a whole file held in memory (the fuzz target's entry; the tier reads the parts
// into place instead). `payload_bytes` is the size the reader expects.
absl::StatusOr<BlockRecord> VerifyKvBlockFileBytes(std::span<const std::byte> file,
                                                   const BlockKey& name_space,
                                                   size_t payload_bytes);

}  // namespace textgen::model
