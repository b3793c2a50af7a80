#include "server/core/admission.h"

#include <atomic>
#include <string>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/model_name.h"
#include "server/core/validation.h"

namespace textgen::server {
namespace {

using ::testing::HasSubstr;

TEST(AdmitForPreparationTest, WithoutAPoolPreparesOnTheCallingThread) {
  bool prepared = false;
  AdmitForPreparation(
      nullptr, [&] { prepared = true; },
      [](const absl::Status&) { FAIL() << "nothing refuses without a pool"; });
  EXPECT_TRUE(prepared);
}

TEST(AdmitForPreparationTest, AFullPoolRefusesWithItsStatus) {
  std::atomic<int> prepared{0};
  absl::Status refusal;
  const auto refused = [&](const absl::Status& status) { refusal = status; };
  {
    PreparationPool pool({.threads = 1, .max_queue = 1});
    absl::Notification started, release;
    AdmitForPreparation(
        &pool,
        [&] {
          started.Notify();
          release.WaitForNotification();
          ++prepared;
        },
        refused);
    started.WaitForNotification();  // the one thread is busy: the next task waits in the queue
    AdmitForPreparation(
        &pool, [&] { ++prepared; }, refused);
    EXPECT_TRUE(refusal.ok()) << refusal;
    AdmitForPreparation(
        &pool, [&] { ADD_FAILURE() << "a refused task ran"; }, refused);
    EXPECT_EQ(refusal.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(refusal.message(), HasSubstr("--max-queue"));
    release.Notify();
  }  // the pool runs what it accepted before it goes
  EXPECT_EQ(prepared.load(), 2);
}

TEST(CheckModelNameTest, TheServedNameOrNoneIsAccepted) {
  EXPECT_TRUE(CheckModelName("", "tiny").ok());
  EXPECT_TRUE(CheckModelName("tiny", "tiny").ok());
  const absl::Status other = CheckModelName("gpt-4o", "tiny");
  EXPECT_EQ(other.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(other.message(), "the model 'gpt-4o' does not exist; this server serves 'tiny'");
  EXPECT_EQ(ErrorField(other), "model");
  EXPECT_EQ(CheckModelName(std::string(1000, 'x'), "tiny").message().size(),
            std::string("the model '' does not exist; this server serves 'tiny'").size() + 256)
      << "a client's long name is cut";
}

}  // namespace
}  // namespace textgen::server
