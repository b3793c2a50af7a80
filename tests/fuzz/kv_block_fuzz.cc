// libFuzzer target: KV block files as --kv-cache-dir holds them (a shared directory is
// untrusted: another replica, a full disk or a person may have written it). The input,
// after a flags byte, is put in place as the file of one block and read back through
// KvDiskTier::Load, the server's read path. Load must agree with VerifyKvBlockFileBytes and,
// when it accepts, hand out exactly the file's payload.
//   flags bit 0: the header's key, parent and tokens are set to the block's (so inputs reach
//                the payload checks); bit 1: the trailer is set to the right checksum.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "model/runtime/kv_block_file.h"
#include "model/runtime/kv_disk_tier.h"

namespace {

namespace fs = std::filesystem;
using textgen::model::BlockKey;
using textgen::model::BlockRecord;

constexpr size_t kPayload = 512;
constexpr BlockKey kNamespace{.lo = 1, .hi = 2};

struct Fixture {
  std::string dir;
  std::unique_ptr<textgen::model::KvDiskTier> tier;
  BlockRecord record;
  fs::path file;

  Fixture() {
    std::string pattern = (fs::temp_directory_path() / "textgen-kvfuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    dir = pattern;
    auto opened = textgen::model::KvDiskTier::Open({.dir = dir,
                                                    .max_bytes = 1 << 20,
                                                    .name_space = kNamespace,
                                                    .block_bytes = kPayload,
                                                    .warn = nullptr});
    if (!opened.ok()) std::abort();
    tier = *std::move(opened);
    record.parent = textgen::model::RootBlockKey(7);
    for (int i = 0; i < textgen::model::kKvBlockTokens; ++i) record.tokens[i] = 1000 + i;
    record.key = textgen::model::ChainBlockKey(record.parent, record.tokens);
    // Where the tier keeps this block: the one file a Store makes.
    if (!tier->Store(record, std::vector<std::byte>(kPayload))) std::abort();
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.path().extension() == ".kvb") file = entry.path();
    }
    if (file.empty()) std::abort();
  }
  ~Fixture() { fs::remove_all(dir); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture fixture;
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  std::vector<std::byte> file(size - 1);
  if (!file.empty()) std::memcpy(file.data(), data + 1, size - 1);
  if ((flags & 1) != 0 && file.size() >= textgen::model::kKvBlockFileHeaderBytes) {
    const textgen::model::KvBlockFileHeader header =
        textgen::model::EncodeKvBlockHeader(kNamespace, fixture.record, kPayload);
    std::memcpy(file.data() + 32, header.data() + 32, 96);  // key, parent, tokens
  }
  const size_t whole = textgen::model::kKvBlockFileHeaderBytes + kPayload + 8;
  if ((flags & 2) != 0 && file.size() == whole) {
    const uint64_t checksum = textgen::model::KvBlockFileChecksum(
        std::span(file).first(textgen::model::kKvBlockFileHeaderBytes),
        std::span(file).subspan(textgen::model::kKvBlockFileHeaderBytes, kPayload));
    std::memcpy(file.data() + whole - 8, &checksum, 8);
  }
  {
    std::ofstream out(fixture.file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(file.data()),
              static_cast<std::streamsize>(file.size()));
  }
  absl::StatusOr<BlockRecord> verified =
      textgen::model::VerifyKvBlockFileBytes(file, kNamespace, kPayload);
  const bool expected_ok = verified.ok() && verified->key == fixture.record.key &&
                           verified->parent == fixture.record.parent &&
                           verified->tokens == fixture.record.tokens;
  std::vector<std::byte> out(kPayload);
  const bool loaded = fixture.tier->Load(fixture.record, out);
  if (loaded != expected_ok) __builtin_trap();
  if (loaded && std::memcmp(out.data(), file.data() + textgen::model::kKvBlockFileHeaderBytes,
                            kPayload) != 0) {
    __builtin_trap();
  }
  return 0;
}
