// ParseGguf on the real stories260K.gguf, on truncated / corrupted copies, and on crafted
// files with one bad field each.
#include "model/format/gguf_reader.h"

#include <random>
#include <regex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/format/gguf_model.h"
#include "model/format/gguf_writer.h"
#include "tests/model/format/loader_test_util.h"

namespace textgen::model {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using namespace ::textgen::model::testing;

TEST(GgufReaderTest, ParsesStories260KAsProvenanceDescribes) {
  TEXTGEN_REQUIRE_SHARED_FILE(Stories260KGguf());
  const std::string bytes = ReadFile(Stories260KGguf());
  ASSERT_EQ(bytes.size(), 1185376u);
  auto file = ParseGguf(Bytes(bytes));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->version, 3u);
  EXPECT_EQ(file->metadata.size(), 19u);
  EXPECT_EQ(file->tensors.size(), 48u);
  EXPECT_EQ(file->alignment, 32u);
  EXPECT_EQ(file->data_offset, 14176u);
  EXPECT_EQ(*file->GetString("general.architecture"), "llama");
  EXPECT_EQ(*file->GetInt("llama.context_length", 0, 1 << 20), 2048);
  const GgufTensorInfo* k = file->FindTensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->n_dims, 2);
  EXPECT_EQ(k->dims[0], 64);
  EXPECT_EQ(k->dims[1], 32);
  EXPECT_EQ(k->dtype, DType::kF32);
  EXPECT_EQ(k->nbytes, 64u * 32 * 4);
}

// Every message a truncated file can produce names the field and an offset or size.
constexpr char kTruncationMessage[] =
    ".*(needs [0-9]+ bytes at offset [0-9]+ but the file ends at [0-9]+|"
    "exceeds file size [0-9]+|cannot fit in .*[0-9]+ bytes|beyond file size [0-9]+).*";

TEST(GgufReaderTest, TruncationAnywhereFailsWithASpecificMessage) {
  TEXTGEN_REQUIRE_SHARED_FILE(Stories260KGguf());
  const std::string bytes = ReadFile(Stories260KGguf());
  std::vector<size_t> cuts;
  for (size_t n = 0; n < 14176 + 200; n += 97) cuts.push_back(n);         // header + tensor infos
  for (size_t n = 14176; n < bytes.size(); n += 9973) cuts.push_back(n);  // data section
  cuts.push_back(bytes.size() - 1);
  for (size_t n : cuts) {
    auto file = ParseGguf(Bytes(bytes).first(n));
    ASSERT_FALSE(file.ok()) << "truncated at " << n;
    EXPECT_THAT(std::string(file.status().message()), MatchesRegex(kTruncationMessage))
        << "truncated at " << n;
  }
}

TEST(GgufReaderTest, RandomCorruptionNeverCrashes) {
  TEXTGEN_REQUIRE_SHARED_FILE(Stories260KGguf());
  const std::string original = ReadFile(Stories260KGguf());
  std::mt19937 rng(1234);
  int rejected = 0;
  for (int iteration = 0; iteration < 400; ++iteration) {
    std::string bytes = original;
    const int flips = 1 + iteration % 8;
    for (int i = 0; i < flips; ++i) {
      // Mostly the structural region (header, metadata, tensor infos), sometimes anywhere.
      const size_t limit = iteration % 4 == 0 ? bytes.size() : 14176;
      bytes[rng() % limit] = static_cast<char>(rng());
    }
    auto file = ParseGguf(Bytes(bytes));
    absl::Status status = file.status();
    if (file.ok()) status = BuildModelFromGguf(*file, "corrupt").status();
    if (!status.ok()) {
      ++rejected;
      EXPECT_GT(status.message().size(), 10u) << status;
    }
  }
  EXPECT_GT(rejected, 50);  // most structural flips must be caught
}

// A tiny valid file to break one field at a time.
std::string TinyFile() {
  GgufWriter writer;
  writer.AddMetadata("general.architecture", GgufValue::String("llama"));
  writer.AddMetadata("llama.block_count", GgufValue::Uint32(1));
  std::vector<float> v(64, 1.0f);
  EXPECT_TRUE(writer.AddFloatTensor("blk.0.attn_norm.weight", DType::kF32, {64}, v).ok());
  EXPECT_TRUE(writer.AddFloatTensor("blk.0.ffn_norm.weight", DType::kQ8_0, {64}, v).ok());
  return writer.Serialize();
}

TEST(GgufReaderTest, RejectsBadMagicAndVersion) {
  std::string bytes = TinyFile();
  ASSERT_TRUE(ParseGguf(Bytes(bytes)).ok());
  Poke<uint32_t>(bytes, 4, 1);
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(),
              HasSubstr("GGUF header: unsupported version 1"));
  Poke<uint32_t>(bytes, 4, 2);  // v2 has the same layout
  EXPECT_TRUE(ParseGguf(Bytes(bytes)).ok());
  bytes[0] = 'X';
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(), HasSubstr("bad magic"));
}

TEST(GgufReaderTest, HugeCountsAreBoundedByTheFileSize) {
  std::string bytes = TinyFile();
  Poke<uint64_t>(bytes, 8, uint64_t{1} << 60);  // tensor count
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(), HasSubstr("tensor count"));
  bytes = TinyFile();
  Poke<uint64_t>(bytes, 16, uint64_t{1} << 60);  // metadata count
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(), HasSubstr("metadata count"));
  bytes = TinyFile();
  const size_t arch = PosAfterString(bytes, "general.architecture");
  Poke<uint64_t>(bytes, arch + 4, uint64_t{1} << 62);  // string length of its value
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(),
              HasSubstr("metadata key #1 (general.architecture): string value needs"));
}

TEST(GgufReaderTest, HugeArrayCountDoesNotAllocate) {
  GgufWriter writer;
  writer.AddMetadata("tokenizer.ggml.scores", GgufValue::Float32Array({1.0f, 2.0f}));
  std::string bytes = writer.Serialize();
  const size_t pos = PosAfterString(bytes, "tokenizer.ggml.scores");
  Poke<uint64_t>(bytes, pos + 8, uint64_t{1} << 61);  // after value type and element type
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(),
              HasSubstr("(tokenizer.ggml.scores): array of 2305843009213693952 float32"));
}

TEST(GgufReaderTest, RejectsUnsupportedTensorTypeByName) {
  std::string bytes = TinyFile();
  const size_t pos = PosAfterString(bytes, "blk.0.ffn_norm.weight");
  Poke<uint32_t>(bytes, pos + 4 + 8, 16);  // n_dims, dims[0], then the type: IQ2_XXS
  auto file = ParseGguf(Bytes(bytes));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(file.status().message(),
              HasSubstr("tensor blk.0.ffn_norm.weight: ggml type IQ2_XXS (16) is not supported "
                        "(supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, "
                        "Q4_K, Q5_K, Q6_K, MXFP4)"));
}

TEST(GgufReaderTest, RejectsRowsThatAreNotWholeBlocks) {
  std::string bytes = TinyFile();
  const size_t pos = PosAfterString(bytes, "blk.0.ffn_norm.weight");
  Poke<uint64_t>(bytes, pos + 4, 48);
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(),
              HasSubstr("tensor blk.0.ffn_norm.weight: Q8_0 row length 48 is not a multiple of "
                        "its 32-element block"));
  // A K-quant row must hold whole 256-element super-blocks (llama-quantize falls back to
  // Q5_0/Q8_0 for such rows, so a file that has one is corrupt).
  bytes = TinyFile();
  Poke<uint32_t>(bytes, pos + 4 + 8, 12);  // Q4_K with 64-element rows
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(),
              HasSubstr("tensor blk.0.ffn_norm.weight: Q4_K row length 64 is not a multiple of "
                        "its 256-element block"));
}

TEST(GgufReaderTest, RejectsTooManyDimsAndOverflowingShapes) {
  std::string bytes = TinyFile();
  const size_t pos = PosAfterString(bytes, "blk.0.attn_norm.weight");
  Poke<uint32_t>(bytes, pos, 5);
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(),
              HasSubstr("tensor blk.0.attn_norm.weight: n_dims 5 is not in [1, 4]"));
  bytes = TinyFile();
  Poke<uint64_t>(bytes, pos + 4, 0);
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(),
              HasSubstr("tensor blk.0.attn_norm.weight: dimension 0 = 0"));
}

TEST(GgufReaderTest, DataRangeBeyondTheFileNamesTheTensor) {
  std::string bytes = TinyFile();
  const size_t pos = PosAfterString(bytes, "blk.0.ffn_norm.weight");
  Poke<uint64_t>(bytes, pos + 4 + 8 + 4, 1 << 20);  // data offset
  auto file = ParseGguf(Bytes(bytes));
  EXPECT_THAT(std::string(file.status().message()),
              MatchesRegex("tensor blk.0.ffn_norm.weight: data range \\[[0-9]+, [0-9]+\\) "
                           "exceeds file size [0-9]+"));
}

TEST(GgufReaderTest, OverlappingTensorsAreRejected) {
  std::string bytes = TinyFile();
  const size_t pos = PosAfterString(bytes, "blk.0.ffn_norm.weight");
  Poke<uint64_t>(bytes, pos + 4 + 8 + 4, 0);  // same offset as attn_norm
  EXPECT_THAT(ParseGguf(Bytes(bytes)).status().message(), HasSubstr("overlaps tensor"));
}

TEST(GgufReaderTest, TypedLookupsNameKeyAndTypes) {
  auto file = ParseGguf(Bytes(TinyFile()));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->GetInt("general.architecture", 0, 10).status().message(),
            "metadata key #1 (general.architecture): expected an integer, got string");
  EXPECT_EQ(file->GetString("llama.block_count").status().message(),
            "metadata key #2 (llama.block_count): expected string, got uint32");
  EXPECT_EQ(file->GetFloat("llama.nope").status().code(), absl::StatusCode::kNotFound);
}

TEST(GgufReaderTest, RejectsBadAlignment) {
  GgufWriter writer;
  writer.AddMetadata("general.alignment", GgufValue::Uint32(48));
  EXPECT_THAT(ParseGguf(Bytes(writer.Serialize())).status().message(),
              HasSubstr("48 is not a power of two"));
}

}  // namespace
}  // namespace textgen::model
