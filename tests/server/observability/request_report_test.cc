#include "server/observability/request_report.h"

#include <vector>

#include "gtest/gtest.h"
#include "server/scheduler/stream_event.h"

namespace textgen::server {
namespace {

class CountingObserver final : public RequestObserver {
 public:
  void OnRequestDone(const RequestRecord& record) override { records.push_back(record); }
  std::vector<RequestRecord> records;
};

TEST(RequestReportTest, ReportsOnceWithTheFirstOutcome) {
  CountingObserver observer;
  const absl::Time arrival = absl::Now() - absl::Milliseconds(250);
  RequestReport report("http", &observer, nullptr, arrival);
  report.record().prompt_tokens = 7;
  EXPECT_FALSE(report.finished());
  EXPECT_TRUE(report.Finish(absl::CancelledError("the client went away")));
  EXPECT_FALSE(report.Finish(absl::OkStatus())) << "a later outcome is not reported";
  ASSERT_EQ(observer.records.size(), 1u);
  const RequestRecord& record = observer.records[0];
  EXPECT_STREQ(record.api, "http");
  EXPECT_EQ(record.code, absl::StatusCode::kCancelled);
  EXPECT_EQ(record.message, "the client went away");
  EXPECT_EQ(record.prompt_tokens, 7);
  EXPECT_GE(record.duration_seconds, 0.25);
  EXPECT_LT(record.duration_seconds, 60);
}

TEST(ReplyFinishReasonTest, ToolCallsEndAReplyUnlessTheLengthCutIt) {
  EXPECT_EQ(ReplyFinishReason(FinishReason::kStopToken, true), FinishReason::kToolCalls);
  EXPECT_EQ(ReplyFinishReason(FinishReason::kEos, true), FinishReason::kToolCalls);
  EXPECT_EQ(ReplyFinishReason(FinishReason::kLength, true), FinishReason::kLength);
  EXPECT_EQ(ReplyFinishReason(FinishReason::kStopSequence, false), FinishReason::kStopSequence);
}

}  // namespace
}  // namespace textgen::server
