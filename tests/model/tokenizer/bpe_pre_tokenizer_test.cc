// The BPE pre-tokenizers by name and the special-token splitter. Whole vocabularies are checked
// against llama.cpp's tokenizer test cases in tests/python/test_vocab_cases.py.

#include "model/tokenizer/bpe_pre_tokenizer.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/tokenizer/special_token_splitter.h"

namespace textgen::model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Chunks(const std::string& name, const std::string& text) {
  auto pre = BpePreTokenizer::Create(name);
  EXPECT_TRUE(pre.ok()) << pre.status();
  if (!pre.ok()) return {};
  std::vector<std::string> out;
  for (std::string_view chunk : (*pre)->Split(text)) out.emplace_back(chunk);
  return out;
}

TEST(BpePreTokenizerTest, DigitsFollowEachFamily) {
  // GPT-2 keeps a digit run whole; Llama 3 cuts it in threes from the left; Qwen 2 and
  // StarCoder one digit at a time; "default" isolates runs of three.
  EXPECT_THAT(Chunks("gpt-2", "in 1851"), ElementsAre("in", " 1851"));
  EXPECT_THAT(Chunks("llama-bpe", "in 1851"), ElementsAre("in", " ", "185", "1"));
  EXPECT_THAT(Chunks("qwen2", "in 1851"), ElementsAre("in", " ", "1", "8", "5", "1"));
  EXPECT_THAT(Chunks("starcoder", "in 1851"), ElementsAre("in", " ", "1", "8", "5", "1"));
  EXPECT_THAT(Chunks("default", "1851"), ElementsAre("185", "1"));
}

TEST(BpePreTokenizerTest, Llama3KeepsNewlinesAndCaseInsensitiveContractions) {
  EXPECT_THAT(Chunks("llama-bpe", "I'M here\n\n  ok"),
              ElementsAre("I", "'M", " here", "\n\n", " ", " ok"));
  EXPECT_THAT(Chunks("gpt-2", "I'M"), ElementsAre("I", "'", "M"));
}

TEST(BpePreTokenizerTest, ChunksCoverTheTextExactly) {
  const std::string text = "Ünïcödé  \t text, 12345 — 日本語!\r\n  end ";
  for (const std::string& name : BpePreTokenizer::SupportedNames()) {
    std::string joined;
    for (const std::string& chunk : Chunks(name, text)) {
      EXPECT_FALSE(chunk.empty()) << name;
      joined += chunk;
    }
    EXPECT_EQ(joined, text) << name;
  }
  EXPECT_TRUE(Chunks("llama-bpe", "").empty());
}

TEST(BpePreTokenizerTest, UnknownNameIsAnErrorThatListsTheKnownOnes) {
  auto pre = BpePreTokenizer::Create("no-such-model");
  ASSERT_FALSE(pre.ok());
  EXPECT_EQ(pre.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(pre.status().message(),
              HasSubstr("tokenizer.ggml.pre \"no-such-model\" is not a pre-tokenizer textgen "
                        "knows (known: default, gpt-2"));
  EXPECT_FALSE(BpePreTokenizer::TraitsOf("no-such-model").ok());
  EXPECT_TRUE(BpePreTokenizer::TraitsOf("llama-bpe")->add_bos);
  EXPECT_TRUE(BpePreTokenizer::TraitsOf("llama-bpe")->ignore_merges);
  EXPECT_FALSE(BpePreTokenizer::TraitsOf("qwen2")->add_bos);
}

std::vector<std::pair<std::string, int>> Segments(const SpecialTokenSplitter& splitter,
                                                  const std::string& text) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& segment : splitter.Split(text)) out.emplace_back(segment.text, segment.id);
  return out;
}

// Chat prompts: control tokens inside untrusted bytes stay text; user-defined tokens do not
// care (Encode matches them in any text too).
TEST(SpecialTokenSplitterTest, ControlTokensAreNotMatchedInsideUntrustedRanges) {
  SpecialTokenSplitter::Token control{"<c>", 7};
  control.control = true;
  const SpecialTokenSplitter splitter({control, {"<u>", 8}});
  //                       0123456789012345678
  const std::string text = "<c>ab<c><u>cd<c>";
  const std::vector<TextRange> untrusted = {{3, 13}};  // "ab<c><u>cd"
  std::vector<std::pair<std::string, int>> out;
  for (const auto& segment : splitter.Split(text, untrusted)) {
    out.emplace_back(segment.text, segment.id);
  }
  using P = std::pair<std::string, int>;
  EXPECT_THAT(out, ElementsAre(P{"<c>", 7}, P{"ab<c>", -1}, P{"<u>", 8}, P{"cd", -1}, P{"<c>", 7}));
  // A range that covers only part of a control token still keeps that token text.
  out.clear();
  const std::vector<TextRange> partial = {{14, 15}};
  for (const auto& segment : splitter.Split(text, partial)) {
    out.emplace_back(segment.text, segment.id);
  }
  EXPECT_THAT(out, ElementsAre(P{"<c>", 7}, P{"ab", -1}, P{"<c>", 7}, P{"<u>", 8}, P{"cd<c>", -1}));
}

TEST(SpecialTokenSplitterTest, LongestTokensClaimTheirTextFirst) {
  const SpecialTokenSplitter splitter({{"  ", 2}, {"   ", 3}, {"<|x|>", 9}, {"", 1}});
  using P = std::pair<std::string, int>;
  EXPECT_THAT(Segments(splitter, "a     b<|x|>"),
              ElementsAre(P{"a", -1}, P{"   ", 3}, P{"  ", 2}, P{"b", -1}, P{"<|x|>", 9}));
  EXPECT_THAT(Segments(splitter, "plain"), ElementsAre(P{"plain", -1}));
  EXPECT_TRUE(Segments(splitter, "").empty());
}

TEST(SpecialTokenSplitterTest, RstripDropsTheWhitespaceAfterTheToken) {
  const SpecialTokenSplitter splitter(
      {{"<|end|>", 7, /*rstrip=*/true}, {"<|user|>", 8, /*rstrip=*/false}});
  using P = std::pair<std::string, int>;
  EXPECT_THAT(Segments(splitter, "a <|end|> \n b<|user|> c"),
              ElementsAre(P{"a ", -1}, P{"<|end|>", 7}, P{"b", -1}, P{"<|user|>", 8}, P{" c", -1}));
}

}  // namespace
}  // namespace textgen::model
