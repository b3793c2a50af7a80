#include "model/tokenizer/draft_vocabulary.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace textgen::model {
namespace {

using ::testing::HasSubstr;

TokenizerData Vocabulary(int size) {
  TokenizerData data;
  data.bos_id = 1;
  data.eos_id = 2;
  for (int i = 0; i < size; ++i) {
    data.tokens.push_back(i < 3 ? std::string(i == 0   ? "<unk>"
                                              : i == 1 ? "<s>"
                                                       : "</s>")
                                : "piece" + std::to_string(i));
    data.token_types.push_back(i < 3 ? TokenizerData::kControl : TokenizerData::kNormal);
  }
  return data;
}

TEST(DraftVocabularyTest, SameTokensMatch) {
  EXPECT_TRUE(CheckDraftVocabulary(Vocabulary(300), Vocabulary(300)).ok());
}

TEST(DraftVocabularyTest, PaddedEndsMatch) {
  // Converters pad to a multiple of 64 or 128; the ids both have are what counts.
  EXPECT_TRUE(CheckDraftVocabulary(Vocabulary(300), Vocabulary(300 + 128)).ok());
  EXPECT_TRUE(CheckDraftVocabulary(Vocabulary(300 + 100), Vocabulary(300)).ok());
}

TEST(DraftVocabularyTest, SizesFarApartAreRefused) {
  const absl::Status status = CheckDraftVocabulary(Vocabulary(300), Vocabulary(300 + 129));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("300 tokens in the target, 429 in the draft"));
}

TEST(DraftVocabularyTest, FirstDifferentTokenIsNamed) {
  TokenizerData draft = Vocabulary(300);
  draft.tokens[77] = "other\n";
  const absl::Status status = CheckDraftVocabulary(Vocabulary(300), draft);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("token 77 is \"piece77\" (type 1) in the target, "
                                          "\"other\\n\" (type 1) in the draft"));
}

TEST(DraftVocabularyTest, DifferentTokenTypeIsRefused) {
  TokenizerData draft = Vocabulary(300);
  draft.token_types[5] = TokenizerData::kControl;
  EXPECT_THAT(CheckDraftVocabulary(Vocabulary(300), draft).message(), HasSubstr("token 5"));
}

TEST(DraftVocabularyTest, DifferentKindOrEndTokensAreRefused) {
  TokenizerData draft = Vocabulary(300);
  draft.kind = TokenizerData::Kind::kGpt2ByteBpe;
  EXPECT_THAT(CheckDraftVocabulary(Vocabulary(300), draft).message(),
              HasSubstr("target tokenizer SentencePiece, draft GPT-2 byte-level BPE"));
  draft = Vocabulary(300);
  draft.eos_id = 299;
  EXPECT_THAT(CheckDraftVocabulary(Vocabulary(300), draft).message(),
              HasSubstr("BOS/EOS ids 1/2 in the target, 1/299 in the draft"));
}

}  // namespace
}  // namespace textgen::model
