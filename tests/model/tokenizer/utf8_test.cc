#include "model/tokenizer/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace textgen::model {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Test, AcceptsValidText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii\n"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9"));                   // é
  EXPECT_TRUE(IsValidUtf8("\xE2\x82\xAC"));                  // €
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x98\x80"));              // 😀
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));              // U+10FFFF
  EXPECT_TRUE(IsValidUtf8("\xED\x9F\xBF"));                  // U+D7FF, last before surrogates
  EXPECT_TRUE(IsValidUtf8(std::string("nul\0inside", 10)));  // NUL is a valid character
}

TEST(Utf8Test, RejectsInvalidText) {
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation byte
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong 3-byte form
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // UTF-16 surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));          // truncated €
  EXPECT_FALSE(IsValidUtf8("ok\xFF"));
}

TEST(Utf8Test, FindsTheFirstInvalidByte) {
  EXPECT_EQ(FirstInvalidUtf8("plain ascii"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("ab\xC3"), 2u);            // truncated
  EXPECT_EQ(FirstInvalidUtf8("a\xC0\x80"), 1u);         // overlong NUL
  EXPECT_EQ(FirstInvalidUtf8("\xED\xA0\x80"), 0u);      // surrogate U+D800
  EXPECT_EQ(FirstInvalidUtf8("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("x\x80y"), 1u);            // lone continuation byte
}

TEST(Utf8Test, SanitizeReplacesMaximalSubparts) {
  EXPECT_EQ(SanitizeUtf8("abc"), "abc");
  EXPECT_EQ(SanitizeUtf8("a\xE2\x82"), "a" + kFffd);  // truncated at the end
  EXPECT_EQ(SanitizeUtf8("\xE2\x82"
                         "A"),
            kFffd + "A");                              // one U+FFFD for E2 82
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), kFffd + kFffd);  // C0 never starts a character
  EXPECT_EQ(SanitizeUtf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(Utf8Test, AppendCompleteHoldsBackOnlyAnIncompleteTail) {
  std::string out;
  EXPECT_EQ(AppendCompleteUtf8("ab\xF0\x9F", &out), 2u);
  EXPECT_EQ(out, "ab");
  out.clear();
  EXPECT_EQ(AppendCompleteUtf8("\xF0\x9F"
                               "x",
                               &out),
            0u);  // cannot complete any more
  EXPECT_EQ(out, kFffd + "x");
  out.clear();
  EXPECT_EQ(AppendCompleteUtf8("\xE2\x82\xAC", &out), 0u);
  EXPECT_EQ(out, "\xE2\x82\xAC");
}

}  // namespace
}  // namespace textgen::model
