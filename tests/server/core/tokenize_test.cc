// Tokenize and Detokenize as both front ends serve them: limits checked before the work,
// errors naming their field.
#include "server/core/tokenize.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/validation.h"
#include "tests/testing/byte_tokenizer.h"

namespace textgen::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TokenizeTest, RoundTripsWithTheModelsBosDefault) {
  testing::ByteTokenizer tokenizer;
  v1::TokenizeRequest request;
  request.set_text("hi");
  v1::TokenizeResponse response;
  ASSERT_TRUE(Tokenize(tokenizer, /*default_add_bos=*/true, request, response).ok());
  EXPECT_THAT(response.ids(), ElementsAre(1, 'h' + 3, 'i' + 3));
  ASSERT_EQ(response.tokens_size(), 3);
  EXPECT_EQ(response.tokens(1), "h");
  request.set_add_bos(false);
  v1::TokenizeResponse without;
  ASSERT_TRUE(Tokenize(tokenizer, true, request, without).ok());
  EXPECT_THAT(without.ids(), ElementsAre('h' + 3, 'i' + 3));

  v1::DetokenizeRequest back;
  back.mutable_ids()->CopyFrom(without.ids());
  v1::DetokenizeResponse text;
  ASSERT_TRUE(Detokenize(tokenizer, back, text).ok());
  EXPECT_EQ(text.text(), "hi");
}

TEST(TokenizeTest, LimitsAreCheckedBeforeTheWorkAndNameTheirField) {
  testing::ByteTokenizer tokenizer;
  v1::TokenizeRequest big;
  big.set_text(std::string((1 << 20) + 1, 'a'));
  v1::TokenizeResponse ignored;
  const int encodes = tokenizer.encode_calls.load();
  absl::Status status = Tokenize(tokenizer, false, big, ignored);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("text is 1048577 bytes; at most 1048576"));
  EXPECT_EQ(ErrorField(status), "text");
  EXPECT_EQ(tokenizer.encode_calls.load(), encodes) << "tokenized before the limit was checked";

  v1::TokenizeRequest bad_utf8;
  bad_utf8.set_text("a\xff");
  EXPECT_EQ(Tokenize(tokenizer, false, bad_utf8, ignored).code(),
            absl::StatusCode::kInvalidArgument);

  v1::DetokenizeRequest many;
  for (int i = 0; i < (1 << 18) + 1; ++i) many.add_ids(5);
  v1::DetokenizeResponse text;
  status = Detokenize(tokenizer, many, text);
  EXPECT_THAT(std::string(status.message()), HasSubstr("ids has 262145 entries; at most 262144"));
  v1::DetokenizeRequest out_of_range;
  out_of_range.add_ids(259);
  status = Detokenize(tokenizer, out_of_range, text);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("259"));
}

}  // namespace
}  // namespace textgen::server
