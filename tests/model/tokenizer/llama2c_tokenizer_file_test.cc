#include "model/tokenizer/llama2c_tokenizer_file.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_files.h"
#include "tests/testing/temp_files.h"

namespace textgen::model {
namespace {

using ::testing::HasSubstr;
using ::textgen::test_support::TestTempPath;

std::string LlamaTokenizerBin() {
  return ::textgen::test_support::SharedModelPath("llama2-tokenizer/tokenizer.bin");
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Llama2cTokenizerFileTest, ReadsLlama2VocabularyInGgufConvention) {
  TEXTGEN_REQUIRE_SHARED_FILE(LlamaTokenizerBin());
  auto data = ReadLlama2cTokenizer(LlamaTokenizerBin(), 32000);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->tokens.size(), 32000u);
  ASSERT_EQ(data->scores.size(), 32000u);
  ASSERT_EQ(data->token_types.size(), 32000u);
  EXPECT_EQ(data->kind, TokenizerData::Kind::kSentencePieceBpe);
  EXPECT_EQ(data->bos_id, 1);
  EXPECT_EQ(data->eos_id, 2);
  EXPECT_EQ(data->unk_id, 0);
  EXPECT_TRUE(data->add_bos);
  EXPECT_EQ(data->tokens[0], "<unk>");
  EXPECT_EQ(data->tokens[1], "<s>");
  EXPECT_EQ(data->tokens[2], "</s>");
  EXPECT_EQ(data->token_types[0], TokenizerData::kUnknown);
  EXPECT_EQ(data->token_types[1], TokenizerData::kControl);
  EXPECT_EQ(data->token_types[2], TokenizerData::kControl);
  EXPECT_EQ(data->tokens[3], "<0x00>");
  EXPECT_EQ(data->tokens[13], "<0x0A>");
  EXPECT_EQ(data->tokens[258], "<0xFF>");
  for (int id = 3; id <= 258; ++id) EXPECT_EQ(data->token_types[id], TokenizerData::kByte) << id;
  EXPECT_EQ(data->token_types[259], TokenizerData::kNormal);
  // Values from python sentencepiece on tokenizer.model: id_to_piece / get_score.
  EXPECT_EQ(data->tokens[259], "\xE2\x96\x81\xE2\x96\x81");  // "▁▁"
  EXPECT_EQ(data->tokens[450], "\xE2\x96\x81The");           // "▁The"
  EXPECT_FLOAT_EQ(data->scores[450], -191.0f);
  EXPECT_EQ(data->tokens[29871], "\xE2\x96\x81");  // "▁"
}

TEST(Llama2cTokenizerFileTest, RejectsVocabSizeThatDoesNotMatchTheFile) {
  TEXTGEN_REQUIRE_SHARED_FILE(LlamaTokenizerBin());
  auto smaller = ReadLlama2cTokenizer(LlamaTokenizerBin(), 31999);
  ASSERT_FALSE(smaller.ok());
  EXPECT_THAT(smaller.status().message(), HasSubstr("bytes left after 31999 tokens"));
  auto larger = ReadLlama2cTokenizer(LlamaTokenizerBin(), 32001);
  ASSERT_FALSE(larger.ok());
  EXPECT_THAT(larger.status().message(), HasSubstr("token 32000"));
  EXPECT_THAT(larger.status().message(), HasSubstr("past the end of the file"));
}

TEST(Llama2cTokenizerFileTest, RejectsTruncatedFile) {
  TEXTGEN_REQUIRE_SHARED_FILE(LlamaTokenizerBin());
  const std::string bytes = ReadFile(LlamaTokenizerBin());
  const std::string path = TestTempPath("truncated_tokenizer.bin");
  WriteFile(path, bytes.substr(0, bytes.size() - 3));
  auto data = ReadLlama2cTokenizer(path, 32000);
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(data.status().message(), HasSubstr("token 31999"));
  EXPECT_THAT(data.status().message(), HasSubstr("past the end of the file"));
}

TEST(Llama2cTokenizerFileTest, RejectsBadHeaderLengthsAndMissingFile) {
  const std::string path = TestTempPath("bad_tokenizer.bin");
  WriteFile(path, std::string("\x01\x00", 2));
  EXPECT_THAT(ReadLlama2cTokenizer(path, 3).status().message(), HasSubstr("too short"));

  // max_token_length 4, then a token claiming 100 bytes.
  std::string bytes;
  auto put_i32 = [&bytes](int32_t v) { bytes.append(reinterpret_cast<const char*>(&v), 4); };
  put_i32(4);
  float score = 0;
  bytes.append(reinterpret_cast<const char*>(&score), 4);
  put_i32(100);
  WriteFile(path, bytes);
  auto data = ReadLlama2cTokenizer(path, 3);
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(data.status().message(), HasSubstr("token 0 length 100"));

  EXPECT_EQ(ReadLlama2cTokenizer(TestTempPath("does_not_exist.bin"), 3).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(ReadLlama2cTokenizer(path, 0).status().message(), HasSubstr("vocab_size 0"));
}

TEST(Llama2cTokenizerFileTest, ReadsStories260KVocabulary) {
  const std::string path = ::textgen::test_support::SharedModelPath("stories260K/tok512.bin");
  TEXTGEN_REQUIRE_SHARED_FILE(path);
  auto data = ReadLlama2cTokenizer(path, 512);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->tokens[1], "<s>");
  EXPECT_EQ(data->tokens[2], "</s>");
  EXPECT_EQ(data->token_types[3], TokenizerData::kByte);
}

}  // namespace
}  // namespace textgen::model
