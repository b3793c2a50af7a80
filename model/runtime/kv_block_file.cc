#include "model/runtime/kv_block_file.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include "xxhash.h"

namespace textgen::model {
namespace {

constexpr char kMagic[8] = {'T', 'G', 'K', 'V', 'B', 'L', 'K', '1'};

void PutKey(std::byte* at, const BlockKey& key) {
  std::memcpy(at, &key.lo, 8);
  std::memcpy(at + 8, &key.hi, 8);
}

BlockKey GetKey(const std::byte* at) {
  BlockKey key;
  std::memcpy(&key.lo, at, 8);
  std::memcpy(&key.hi, at + 8, 8);
  return key;
}

}  // namespace

KvBlockFileHeader EncodeKvBlockHeader(const BlockKey& name_space, const BlockRecord& record,
                                      size_t payload_bytes) {
  KvBlockFileHeader header{};
  std::memcpy(header.data(), kMagic, sizeof(kMagic));
  const auto size = static_cast<uint32_t>(payload_bytes);
  std::memcpy(header.data() + 8, &size, 4);
  PutKey(header.data() + 16, name_space);
  PutKey(header.data() + 32, record.key);
  PutKey(header.data() + 48, record.parent);
  std::memcpy(header.data() + 64, record.tokens.data(), 4 * kKvBlockTokens);
  return header;
}

uint64_t KvBlockFileChecksum(std::span<const std::byte> header,
                             std::span<const std::byte> payload) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, header.data(), header.size());
  XXH3_64bits_update(&state, payload.data(), payload.size());
  return XXH3_64bits_digest(&state);
}

absl::StatusOr<BlockRecord> VerifyKvBlockFile(std::span<const std::byte> header,
                                              std::span<const std::byte> payload, uint64_t checksum,
                                              const BlockKey& name_space,
                                              const BlockRecord* expected) {
  if (header.size() != kKvBlockFileHeaderBytes) {
    return absl::DataLossError(absl::StrCat("KV block file: header of ", header.size(),
                                            " bytes, want ", kKvBlockFileHeaderBytes));
  }
  if (std::memcmp(header.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError(
        "KV block file: bad magic (not a textgen KV block, or another "
        "format version)");
  }
  uint32_t size = 0;
  uint32_t zero = 0;
  std::memcpy(&size, header.data() + 8, 4);
  std::memcpy(&zero, header.data() + 12, 4);
  if (size != payload.size() || zero != 0) {
    return absl::DataLossError(
        absl::StrCat("KV block file: payload of ", size, " bytes, want ", payload.size()));
  }
  if (GetKey(header.data() + 16) != name_space) {
    return absl::DataLossError("KV block file: another model, KV layout or data type");
  }
  BlockRecord record;
  record.key = GetKey(header.data() + 32);
  record.parent = GetKey(header.data() + 48);
  std::memcpy(record.tokens.data(), header.data() + 64, 4 * kKvBlockTokens);
  if (ChainBlockKey(record.parent, record.tokens) != record.key) {
    return absl::DataLossError("KV block file: key does not match its parent and tokens");
  }
  if (expected != nullptr &&
      (record.key != expected->key || record.parent != expected->parent ||
       !std::equal(record.tokens.begin(), record.tokens.end(), expected->tokens.begin()))) {
    return absl::DataLossError("KV block file: holds another block than its name says");
  }
  if (KvBlockFileChecksum(header, payload) != checksum) {
    return absl::DataLossError("KV block file: checksum mismatch (torn or corrupted)");
  }
  return record;
}

absl::StatusOr<BlockRecord> VerifyKvBlockFileBytes(std::span<const std::byte> file,
                                                   const BlockKey& name_space,
                                                   size_t payload_bytes) {
  if (file.size() != kKvBlockFileHeaderBytes + payload_bytes + kKvBlockFileTrailerBytes) {
    return absl::DataLossError(absl::StrCat(
        "KV block file: ", file.size(), " bytes, want ",
        kKvBlockFileHeaderBytes + payload_bytes + kKvBlockFileTrailerBytes, " (truncated?)"));
  }
  uint64_t checksum = 0;
  std::memcpy(&checksum, file.data() + kKvBlockFileHeaderBytes + payload_bytes, 8);
  return VerifyKvBlockFile(file.first(kKvBlockFileHeaderBytes),
                           file.subspan(kKvBlockFileHeaderBytes, payload_bytes), checksum,
                           name_space, nullptr);
}

}  // namespace textgen::model
