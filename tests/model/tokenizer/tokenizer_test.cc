// Unit tests of the tokenizers on the real vocabularies in ../shared (exact-id comparisons
// on long text are in tokenizer_reference_test.cc).

#include "model/tokenizer/tokenizer.h"

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/tokenizer/gpt2_vocab_files.h"
#include "model/tokenizer/llama2c_tokenizer_file.h"
#include "model/tokenizer/utf8.h"
#include "tests/model/tokenizer/tokenizer_test_util.h"
#include "tests/testing/temp_files.h"

namespace textgen::model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::textgen::test_support::TestTempPath;

const std::string kEmoji = "\xF0\x9F\x98\x80";  // 😀 U+1F600

#define SKIP_WITHOUT_SHARED(relative) \
  TEXTGEN_REQUIRE_SHARED_FILE(::textgen::test_support::SharedModelPath(relative))

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// stories260K: PROVENANCE.md lists llama.cpp's ids for the prompt and the greedy text.
TEST(SentencePieceTokenizerTest, Stories260KMatchesLlamaCppIds) {
  SKIP_WITHOUT_SHARED("stories260K/tok512.bin");
  auto data = ReadLlama2cTokenizer(testing::SharedModelPath("stories260K/tok512.bin"), 512);
  ASSERT_TRUE(data.ok()) << data.status();
  auto tokenizer = CreateTokenizer(*std::move(data));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::vector<int> prompt = (*tokenizer)->Encode("Once upon a time", /*add_bos=*/true);
  EXPECT_THAT(prompt, ElementsAre(1, 403, 407, 261, 378));

  std::vector<int> ids = prompt;
  for (int id : {432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337,
                 410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394,
                 261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432}) {
    ids.push_back(id);
  }
  EXPECT_EQ((*tokenizer)->Decode(ids),
            "Once upon a time, there was a little girl named Lily. She loved to play outside in "
            "the park. One day, she saw a big, red ball. She wanted to play with it,");
}

class LlamaTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_SHARED("llama2-tokenizer/tokenizer.bin");
    tokenizer_ = testing::LoadLlamaTokenizer();
    ASSERT_NE(tokenizer_, nullptr);
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(LlamaTokenizerTest, EncodesLikeSentencePiece) {
  // Ids from python sentencepiece with tokenizer.model (sp.encode).
  EXPECT_THAT(tokenizer_->Encode("Hello world", false), ElementsAre(15043, 3186));
  EXPECT_THAT(tokenizer_->Encode("Hello world", true), ElementsAre(1, 15043, 3186));
  EXPECT_THAT(tokenizer_->Encode("\n", false), ElementsAre(29871, 13));
  EXPECT_THAT(tokenizer_->Encode("", true), ElementsAre(1));
  EXPECT_THAT(tokenizer_->Encode("", false), ElementsAre());
  // Byte fallback: 😀 is not a piece, so its four bytes become <0xF0><0x9F><0x98><0x80>.
  EXPECT_THAT(tokenizer_->Encode(kEmoji, false), ElementsAre(29871, 243, 162, 155, 131));
  EXPECT_EQ(tokenizer_->vocab_size(), 32000);
  EXPECT_EQ(tokenizer_->bos_id(), 1);
  EXPECT_EQ(tokenizer_->eos_id(), 2);
}

TEST_F(LlamaTokenizerTest, DecodesLikeSentencePiece) {
  EXPECT_EQ(tokenizer_->Decode({1, 15043, 3186, 2}), "Hello world");
  EXPECT_EQ(tokenizer_->Decode({15043, 3186}), "Hello world");  // leading "▁" dropped at start
  EXPECT_EQ(tokenizer_->TokenBytes(3186, /*previous_id=*/15043), " world");
  EXPECT_EQ(tokenizer_->TokenBytes(3186, /*previous_id=*/1), "world");
  EXPECT_EQ(tokenizer_->TokenBytes(13, /*previous_id=*/1), "\n");
  EXPECT_EQ(tokenizer_->TokenBytes(2, /*previous_id=*/15043), "");
  EXPECT_EQ(tokenizer_->TokenText(13), "<0x0A>");
  EXPECT_EQ(tokenizer_->TokenText(1), "<s>");
  EXPECT_EQ(tokenizer_->TokenText(3186), " world");
  for (const std::string& text :
       std::vector<std::string>{"  two leading spaces", "tabs\tand\nnewlines\n\n", kEmoji + "!",
                                std::string("\xE4\xBD\xA0\xE5\xA5\xBD")}) {
    EXPECT_EQ(tokenizer_->Decode(tokenizer_->Encode(text, true)), text);
  }
}

TEST_F(LlamaTokenizerTest, IncrementalDetokenizerHoldsSplitCharacter) {
  IncrementalDetokenizer detokenizer(tokenizer_.get(), /*previous_id=*/1);
  EXPECT_EQ(detokenizer.Push(29871), "");  // "▁" right after BOS: the dummy prefix
  EXPECT_EQ(detokenizer.Push(243), "");    // <0xF0>
  EXPECT_EQ(detokenizer.Push(162), "");    // <0x9F>
  EXPECT_EQ(detokenizer.Push(155), "");    // <0x98>
  EXPECT_EQ(detokenizer.Push(131), kEmoji);
  EXPECT_EQ(detokenizer.Push(3186), " world");
  EXPECT_EQ(detokenizer.Flush(), "");
}

TEST_F(LlamaTokenizerTest, IncrementalDetokenizerReplacesBytesThatCannotComplete) {
  IncrementalDetokenizer detokenizer(tokenizer_.get(), /*previous_id=*/15043);
  EXPECT_EQ(detokenizer.Push(243), "");  // <0xF0> could still start a character
  EXPECT_EQ(detokenizer.Push(68),
            "\xEF\xBF\xBD"
            "A");                                  // <0x41> 'A' ends that hope
  EXPECT_EQ(detokenizer.Push(229), "");            // <0xE2>
  EXPECT_EQ(detokenizer.Flush(), "\xEF\xBF\xBD");  // end of stream
}

class Gpt2TokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_SHARED("gpt2-tokenizer/encoder.json");
    tokenizer_ = testing::LoadGpt2Tokenizer();
    ASSERT_NE(tokenizer_, nullptr);
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(Gpt2TokenizerTest, ReadsOpenAiFiles) {
  auto data = ReadGpt2VocabFiles(testing::SharedModelPath("gpt2-tokenizer/encoder.json"),
                                 testing::SharedModelPath("gpt2-tokenizer/vocab.bpe"));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->kind, TokenizerData::Kind::kGpt2ByteBpe);
  EXPECT_EQ(data->tokens.size(), 50257u);
  EXPECT_EQ(data->merges.size(), 50000u);
  EXPECT_EQ(data->merges[0], "\xC4\xA0 t");  // "Ġ t", first line after #version
  EXPECT_EQ(data->bos_id, 50256);
  EXPECT_EQ(data->eos_id, 50256);
  EXPECT_FALSE(data->add_bos);
  EXPECT_EQ(data->tokens[50256], "<|endoftext|>");
  EXPECT_EQ(data->token_types[50256], TokenizerData::kControl);
}

TEST_F(Gpt2TokenizerTest, EncodesAndDecodes) {
  // GPT-2 ids for "Hello world" (gpt-3-encoder, tiktoken "gpt2").
  EXPECT_THAT(tokenizer_->Encode("Hello world", /*add_bos=*/false), ElementsAre(15496, 995));
  EXPECT_THAT(tokenizer_->Encode("Hello world", /*add_bos=*/true), ElementsAre(50256, 15496, 995));
  EXPECT_EQ(tokenizer_->Decode({15496, 995, 50256}), "Hello world");
  EXPECT_EQ(tokenizer_->TokenText(50256), "<|endoftext|>");
  EXPECT_EQ(tokenizer_->TokenText(995), " world");
  for (const std::string& text :
       std::vector<std::string>{"  two leading spaces", "tabs\tand\nnewlines\n\n", kEmoji + "!",
                                std::string("don't STOP 123,456")}) {
    EXPECT_EQ(tokenizer_->Decode(tokenizer_->Encode(text, false)), text);
  }
}

TEST_F(Gpt2TokenizerTest, IncrementalDetokenizerNeverEmitsHalfACharacter) {
  const std::vector<int> ids = tokenizer_->Encode(kEmoji + " ok", false);
  ASSERT_GE(ids.size(), 3u);
  ASSERT_FALSE(IsValidUtf8(tokenizer_->TokenBytes(ids[0], -1)))
      << "expected the emoji to be split across byte-level tokens";
  IncrementalDetokenizer detokenizer(tokenizer_.get());
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string delta = detokenizer.Push(ids[i]);
    EXPECT_TRUE(IsValidUtf8(delta)) << "delta " << i;
    if (i == 0) {
      EXPECT_EQ(delta, "");
    }
    text += delta;
  }
  text += detokenizer.Flush();
  EXPECT_EQ(text, kEmoji + " ok");
}

TEST(Gpt2VocabFilesTest, RejectsBadFiles) {
  const std::string json_path = TestTempPath("encoder.json");
  const std::string bpe_path = TestTempPath("vocab.bpe");
  WriteFile(bpe_path, "#version: 0.2\na b\n");

  WriteFile(json_path, "{\"a\": 0, \"b\": 1,");
  auto truncated = ReadGpt2VocabFiles(json_path, bpe_path);
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(truncated.status().message(), HasSubstr("not valid JSON"));

  WriteFile(json_path, "[1, 2]");
  EXPECT_THAT(ReadGpt2VocabFiles(json_path, bpe_path).status().message(),
              HasSubstr("expected an object"));
  WriteFile(json_path, "{\"a\": 0, \"b\": 5}");
  EXPECT_THAT(ReadGpt2VocabFiles(json_path, bpe_path).status().message(),
              HasSubstr("\"b\" id 5 is outside [0, 2)"));
  WriteFile(json_path, "{\"a\": 0, \"b\": \"1\"}");
  EXPECT_THAT(ReadGpt2VocabFiles(json_path, bpe_path).status().message(),
              HasSubstr("non-integer id"));

  WriteFile(json_path, "{\"a\": 0, \"b\": 1, \"ab\": 2}");
  WriteFile(bpe_path, "#version: 0.2\na b\nab\n");
  EXPECT_THAT(ReadGpt2VocabFiles(json_path, bpe_path).status().message(),
              HasSubstr("line 3 \"ab\" is not \"left right\""));

  WriteFile(bpe_path, "#version: 0.2\na c\n");
  auto data = ReadGpt2VocabFiles(json_path, bpe_path);
  ASSERT_TRUE(data.ok()) << data.status();
  auto tokenizer = CreateTokenizer(*std::move(data));
  EXPECT_THAT(tokenizer.status().message(), HasSubstr("\"c\" is not in the vocabulary"));

  EXPECT_EQ(ReadGpt2VocabFiles(TestTempPath("missing.json"), bpe_path).status().code(),
            absl::StatusCode::kNotFound);
}

// A vocabulary with a piece spanning a word boundary ("a▁b") must still merge across it
// (the per-word segmentation shortcut only applies when no such piece exists).
TEST(SentencePieceTokenizerTest, MergesAcrossSpacesWhenTheVocabularyAllowsIt) {
  TokenizerData data;
  data.tokens = {"<unk>",
                 "<s>",
                 "</s>",
                 "\xE2\x96\x81",
                 "a",
                 "b",
                 "\xE2\x96\x81"
                 "a",
                 "a\xE2\x96\x81",
                 "a\xE2\x96\x81"
                 "b"};
  data.scores = {0, 0, 0, -1, -1, -1, 5, 10, 20};
  data.token_types = {2, 3, 3, 1, 1, 1, 1, 1, 1};
  data.unk_id = 0;
  data.bos_id = 1;
  data.eos_id = 2;
  auto tokenizer = CreateTokenizer(data);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // "▁a▁b": "a▁" (10) beats "▁a" (5), then "a▁b" (20).
  EXPECT_THAT((*tokenizer)->Encode("a b", /*add_bos=*/false), ElementsAre(3, 8));
  // Without "a▁b" the vocabulary allows segmenting at words: "▁a" + "▁" + "b".
  data.tokens[8] = "ab";
  data.tokens[7] = "ba";
  tokenizer = CreateTokenizer(data);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_THAT((*tokenizer)->Encode("a b", /*add_bos=*/false), ElementsAre(6, 3, 5));
  // "c" is not in the vocabulary and there are no byte tokens: <unk>.
  EXPECT_THAT((*tokenizer)->Encode("c", /*add_bos=*/false), ElementsAre(3, 0));
}

// Found by the tokenizer fuzzer on StarCoder's vocabulary, which has no token for byte 0xF1 and
// whose unknown token is <|endoftext|>: llama.cpp drops the byte, and so must we, rather than
// let user text produce a control token.
TEST(Gpt2ByteBpeTest, ByteWithoutATokenIsDroppedNotUnknown) {
  TokenizerData data;
  data.kind = TokenizerData::Kind::kGpt2ByteBpe;
  data.tokens = {"<|endoftext|>", "a", "b"};
  data.token_types = {TokenizerData::kControl, TokenizerData::kNormal, TokenizerData::kNormal};
  data.unk_id = 0;
  data.eos_id = 0;
  data.add_bos = false;
  auto tokenizer = CreateTokenizer(data);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_THAT((*tokenizer)->Encode("a\tb", /*add_bos=*/false), ElementsAre(1, 2));
  EXPECT_THAT((*tokenizer)->Encode("\t", /*add_bos=*/false), ElementsAre());
}

TEST(SentencePieceTokenizerTest, InfersTokenTypesWhenAbsent) {
  TokenizerData data;
  data.tokens = {"<unk>", "<s>", "</s>", "<0x41>", "\xE2\x96\x81"};
  data.scores = {0, 0, 0, 0, -1};
  data.unk_id = 0;
  data.bos_id = 1;
  data.eos_id = 2;
  auto tokenizer = CreateTokenizer(data);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // "A" is only reachable through the byte token <0x41>; </s> is a control token.
  EXPECT_THAT((*tokenizer)->Encode("A", /*add_bos=*/true), ElementsAre(1, 4, 3));
  EXPECT_EQ((*tokenizer)->Decode({1, 4, 3, 2}), "A");
  EXPECT_EQ((*tokenizer)->TokenText(3), "<0x41>");
}

TEST(CreateTokenizerTest, RejectsInconsistentData) {
  TokenizerData data;
  data.tokens = {"<unk>", "<s>", "</s>"};
  data.scores = {0, 0};
  EXPECT_THAT(CreateTokenizer(data).status().message(), HasSubstr("2 scores for 3 tokens"));
  data.scores = {0, 0, 0};
  data.bos_id = 7;
  EXPECT_THAT(CreateTokenizer(data).status().message(), HasSubstr("bos_id 7"));
  data.bos_id = 1;
  EXPECT_TRUE(CreateTokenizer(data).ok());
  EXPECT_FALSE(CreateTokenizer(TokenizerData{}).ok());
}

}  // namespace
}  // namespace textgen::model

namespace textgen::model {
namespace {

// A small WordPiece vocabulary in llama.cpp's form: word starts "▁x", continuations "x".
TokenizerData WordPieceData() {
  TokenizerData data;
  data.kind = TokenizerData::Kind::kWordPiece;
  data.tokens = {"[PAD]",
                 "[UNK]",
                 "[CLS]",
                 "[SEP]",
                 "\xE2\x96\x81un",
                 "aff",
                 "able",
                 "\xE2\x96\x81"
                 "cafe",
                 "\xE2\x96\x81,",
                 "\xE2\x96\x81\xE4\xB8\xAD",
                 "\xE2\x96\x81"
                 "a",
                 "\xE2\x96\x81"
                 "hello"};
  data.token_types = {TokenizerData::kControl, TokenizerData::kControl, TokenizerData::kControl,
                      TokenizerData::kControl};
  data.token_types.resize(data.tokens.size(), TokenizerData::kNormal);
  data.unk_id = 1;
  data.bos_id = 2;
  data.sep_id = 3;
  data.add_sep = true;
  return data;
}

TEST(WordPieceTest, LongestPiecesFirstWithUnknownWordsWhole) {
  auto tokenizer = CreateTokenizer(WordPieceData());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const Tokenizer& t = **tokenizer;
  // Lowercased, split at punctuation; "unaffable" = ▁un aff able.
  EXPECT_THAT(t.Encode("UnAffable,hello", false), ElementsAre(4, 5, 6, 8, 11));
  // A word with a piece no token covers is [UNK] as a whole (not ▁un + [UNK]).
  EXPECT_THAT(t.Encode("unx hello", false), ElementsAre(1, 11));
  // Accents are stripped (NFD, marks dropped); control characters and U+FFFD vanish;
  // CJK ideographs are words of their own.
  EXPECT_THAT(t.Encode("Caf\xC3\xA9\x01 a\xEF\xBF\xBD", false), ElementsAre(7, 10));
  EXPECT_THAT(t.Encode("a\xE4\xB8\xAD"
                       "a",
                       false),
              ElementsAre(10, 9, 10));
  // Framed [CLS] ... [SEP] with add_bos; whitespace alone is no token.
  EXPECT_THAT(t.Encode(" \t\n", true), ElementsAre(2, 3));
  EXPECT_THAT(t.Encode("hello", true), ElementsAre(2, 11, 3));
  // Control tokens written in text stay text unless parsed.
  EXPECT_THAT(t.Encode("[CLS]", false), ElementsAre(1, 1, 1));
  EXPECT_THAT(t.EncodeWithSpecialTokens("[CLS]a", false, {}), ElementsAre(2, 10));
  EXPECT_EQ(t.Decode({2, 4, 5, 6, 8, 11, 3}), " unaffable , hello");
  EXPECT_EQ(t.TokenText(7),
            "\xE2\x96\x81"
            "cafe");
}

TEST(WordPieceTest, NormalizerSwitchesAndMissingUnknownToken) {
  TokenizerData data = WordPieceData();
  data.lowercase = false;
  data.strip_accents = false;
  auto cased = CreateTokenizer(data);
  ASSERT_TRUE(cased.ok()) << cased.status();
  EXPECT_THAT((*cased)->Encode("Hello hello caf\xC3\xA9", false), ElementsAre(1, 11, 1));
  data.unk_id = -1;
  auto no_unknown = CreateTokenizer(data);
  ASSERT_FALSE(no_unknown.ok());
  EXPECT_THAT(std::string(no_unknown.status().message()), ::testing::HasSubstr("unknown token"));
}

}  // namespace
}  // namespace textgen::model
