#include "server/scheduler/prompt_lookup.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace textgen::server {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<int> Draft(const std::vector<int>& prompt, const std::vector<int>& output,
                       int max_tokens, PromptLookupOptions options = {}) {
  std::vector<int> draft;
  DraftByPromptLookup(prompt, output, options, max_tokens, draft);
  return draft;
}

TEST(PromptLookupTest, ContinuesTheMostRecentEarlierOccurrence) {
  // "... 1 2 3 [4 5] ... 1 2 3 [9] ... 1 2 3": the latest earlier 1 2 3 was followed by 9.
  EXPECT_THAT(Draft({1, 2, 3, 4, 5, 6, 1, 2, 3, 9, 8}, {1, 2, 3}, 3), ElementsAre(9, 8, 1));
  EXPECT_THAT(Draft({1, 2, 3, 4, 5, 6, 1, 2, 3, 9, 8}, {1, 2, 3}, 6),
              ElementsAre(9, 8, 1, 2, 3, 9));
  // Past the end of the text the draft goes round the loop it found; it stops at max_tokens.
  EXPECT_THAT(Draft({5, 6, 7}, {5, 6}, 8), ElementsAre(7, 5, 6, 7, 5, 6, 7, 5));
  EXPECT_THAT(Draft({5, 6, 7, 8}, {5}, 2), ElementsAre(6, 7));
}

TEST(PromptLookupTest, TheLongestMatchingTailWins) {
  // The last two tokens (2 3) occur at 0 (then 4); the last one alone (3) later, then 7.
  const std::vector<int> prompt = {2, 3, 4, 9, 3, 7};
  EXPECT_THAT(Draft(prompt, {2, 3}, 1), ElementsAre(4));
  PromptLookupOptions unigram{.max_ngram = 1, .min_ngram = 1};
  EXPECT_THAT(Draft(prompt, {2, 3}, 1, unigram), ElementsAre(7));
  // Below min_ngram nothing is drafted.
  PromptLookupOptions long_only{.max_ngram = 4, .min_ngram = 3};
  EXPECT_THAT(Draft(prompt, {2, 3}, 1, long_only), IsEmpty());
}

TEST(PromptLookupTest, NoMatchOrNoRoomDraftsNothing) {
  EXPECT_THAT(Draft({1, 2, 3}, {4}, 4), IsEmpty());
  EXPECT_THAT(Draft({1, 2, 1}, {}, 0), IsEmpty());
  EXPECT_THAT(Draft({}, {}, 4), IsEmpty());
  EXPECT_THAT(Draft({7}, {}, 4), IsEmpty());
  // The output alone can hold the match.
  EXPECT_THAT(Draft({}, {4, 5, 4}, 4), ElementsAre(5, 4, 5, 4));
}

}  // namespace
}  // namespace textgen::server
