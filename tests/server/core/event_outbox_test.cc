#include "server/core/event_outbox.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace textgen::server {
namespace {

using ::testing::HasSubstr;

TEST(EventOutboxTest, CountsTokensFirstTokenTimeAndUsage) {
  EventOutbox outbox(/*max_events=*/8);
  EXPECT_FALSE(outbox.first_token_time().has_value());
  ASSERT_TRUE(outbox.Push(TokenEvent{"He", {7, 8}, {}}));
  ASSERT_TRUE(outbox.Push(TokenEvent{"llo", {9}, {}}));
  FinishedEvent finished;
  finished.token_ids = {10};
  finished.usage = Usage{.prompt_tokens = 5, .cached_tokens = 2, .completion_tokens = 4};
  ASSERT_TRUE(outbox.Push(finished));
  EXPECT_EQ(outbox.completion_tokens(), 4);
  EXPECT_TRUE(outbox.first_token_time().has_value());
  ASSERT_TRUE(outbox.usage().has_value());
  EXPECT_EQ(outbox.usage()->cached_tokens, 2);
  EXPECT_EQ(outbox.events().size(), 3u);
}

TEST(EventOutboxTest, OverflowDropsWhatIsQueuedAndRefusesTheRest) {
  EventOutbox outbox(/*max_events=*/2);
  ASSERT_TRUE(outbox.Push(TokenEvent{"a", {1}, {}}));
  ASSERT_TRUE(outbox.Push(TokenEvent{"b", {2}, {}}));
  EXPECT_FALSE(outbox.Push(TokenEvent{"c", {3}, {}}));  // the bound
  EXPECT_TRUE(outbox.overflowed());
  EXPECT_TRUE(outbox.events().empty());
  EXPECT_FALSE(outbox.Push(TokenEvent{"d", {4}, {}}));  // and after it
  EXPECT_EQ(outbox.SlowReaderError().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(outbox.SlowReaderError().message()),
              HasSubstr("more than 2 events buffered"));
}

}  // namespace
}  // namespace textgen::server
