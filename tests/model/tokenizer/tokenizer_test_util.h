#pragma once

// Helpers shared by the tokenizer tests: locating ../shared, loading the real tokenizers,
// and comparing id sequences with a readable first-mismatch report.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/tokenizer/gpt2_vocab_files.h"
#include "model/tokenizer/llama2c_tokenizer_file.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/testing/shared_files.h"

namespace textgen::model::testing {

using ::textgen::test_support::SharedDir;
using ::textgen::test_support::SharedModelPath;

inline std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline std::unique_ptr<Tokenizer> LoadLlamaTokenizer() {
  auto data = ReadLlama2cTokenizer(SharedModelPath("llama2-tokenizer/tokenizer.bin"), 32000);
  EXPECT_TRUE(data.ok()) << data.status();
  if (!data.ok()) return nullptr;
  auto tokenizer = CreateTokenizer(*std::move(data));
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

inline std::unique_ptr<Tokenizer> LoadGpt2Tokenizer() {
  auto data = ReadGpt2VocabFiles(SharedModelPath("gpt2-tokenizer/encoder.json"),
                                 SharedModelPath("gpt2-tokenizer/vocab.bpe"));
  EXPECT_TRUE(data.ok()) << data.status();
  if (!data.ok()) return nullptr;
  auto tokenizer = CreateTokenizer(*std::move(data));
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
}

// Empty string when equal; otherwise where the sequences first differ, with a few ids of
// context on both sides and the text those ids decode to.
inline std::string DescribeIdMismatch(const std::vector<int>& expected,
                                      const std::vector<int>& actual, const Tokenizer& tokenizer) {
  if (expected == actual) return "";
  const size_t common = std::min(expected.size(), actual.size());
  size_t first = 0;
  while (first < common && expected[first] == actual[first]) ++first;
  const size_t begin = first >= 5 ? first - 5 : 0;
  auto window = [&](const std::vector<int>& ids) {
    std::ostringstream out;
    const size_t end = std::min(ids.size(), first + 6);
    for (size_t i = begin; i < end; ++i) {
      out << (i == first ? " >>" : " ") << ids[i] << "(" << tokenizer.TokenText(ids[i]) << ")";
    }
    return out.str();
  };
  std::ostringstream out;
  out << "first mismatch at index " << first << " (expected " << expected.size() << " ids, got "
      << actual.size() << ")\n  expected:" << window(expected) << "\n  actual:  " << window(actual);
  return out.str();
}

}  // namespace textgen::model::testing
