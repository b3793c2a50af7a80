#include "server/scheduler/stop_matcher.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace textgen::server {
namespace {

// Feeds deltas, returns what was emitted per push (and the flush as the last element).
std::vector<std::string> Feed(StopMatcher& m, const std::vector<std::string>& deltas) {
  std::vector<std::string> out;
  for (const std::string& d : deltas) out.push_back(m.Push(d).text);
  out.push_back(m.Flush());
  return out;
}

TEST(StopMatcherTest, NoStopStringsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(Feed(m, {"he", "llo"}), (std::vector<std::string>{"he", "llo", ""}));
}

TEST(StopMatcherTest, MatchAcrossDeltasCutsBeforeStop) {
  StopMatcher m({"lo w"});
  StopMatcher::Result r1 = m.Push("he");
  EXPECT_EQ(r1.text, "he");
  StopMatcher::Result r2 = m.Push("llo");  // "lo" could start "lo w": held back
  EXPECT_EQ(r2.text, "l");
  EXPECT_EQ(m.held_bytes(), 2u);
  StopMatcher::Result r3 = m.Push(" world");
  EXPECT_TRUE(r3.stopped);
  EXPECT_EQ(r3.matched_stop, "lo w");
  EXPECT_EQ(r3.text, "");
  EXPECT_EQ(m.Flush(), "");
  EXPECT_TRUE(m.Push("more").text.empty());
}

TEST(StopMatcherTest, FailedPartialMatchIsReleased) {
  StopMatcher m({"lox"});
  EXPECT_EQ(Feed(m, {"he", "llo", " wo"}), (std::vector<std::string>{"he", "l", "lo wo", ""}));
}

TEST(StopMatcherTest, HeldTextIsFlushedAtEnd) {
  StopMatcher m({"END"});
  EXPECT_EQ(Feed(m, {"abcE", "N"}), (std::vector<std::string>{"abc", "", "EN"}));
}

TEST(StopMatcherTest, EarliestMatchWins) {
  StopMatcher m({"cd", "bcd"});
  StopMatcher::Result r = m.Push("abcde");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.matched_stop, "bcd");
  EXPECT_EQ(r.text, "a");
}

TEST(StopMatcherTest, StopAtStartEmitsNothing) {
  StopMatcher m({"\n"});
  StopMatcher::Result r = m.Push("\nabc");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
}

TEST(StopMatcherTest, RepeatedPrefixCharacters) {
  // "aab" inside "aaab": the held suffix must be the longest partial match.
  StopMatcher m({"aab"});
  EXPECT_EQ(m.Push("a").text, "");
  EXPECT_EQ(m.Push("a").text, "");
  EXPECT_EQ(m.Push("a").text, "a");
  StopMatcher::Result r = m.Push("b");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
}

TEST(StopMatcherTest, MultiByteStopHoldsWholeCharacters) {
  StopMatcher m({"\xC3\xA9t\xC3\xA9"});  // "été"
  EXPECT_EQ(m.Push("caf\xC3\xA9").text, "caf");
  EXPECT_EQ(m.Push("!").text, "\xC3\xA9!");
}

TEST(StopMatcherTest, EmptyStopStringsAreIgnored) {
  StopMatcher m({""});
  EXPECT_EQ(Feed(m, {"abc"}), (std::vector<std::string>{"abc", ""}));
}

}  // namespace
}  // namespace textgen::server
