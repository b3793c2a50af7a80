#include "server/core/session_routing.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace textgen::server {
namespace {

using ::testing::HasSubstr;

TEST(SessionRoutingTest, NoHeaderIsAccepted) {
  EXPECT_TRUE(CheckSessionRoutingHeader({}, "conv-1").ok());
  EXPECT_TRUE(CheckSessionRoutingHeader({}, "").ok());
}

TEST(SessionRoutingTest, HeaderEqualToSessionIdIsAccepted) {
  EXPECT_TRUE(CheckSessionRoutingHeader({"conv-1"}, "conv-1").ok());
}

TEST(SessionRoutingTest, DifferentHeaderIsInvalidAndEchoesNeitherValue) {
  const absl::Status status = CheckSessionRoutingHeader({"conv-2"}, "conv-1");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("x-session-id header (6 bytes) differs"));
  EXPECT_THAT(std::string(status.message()), ::testing::Not(HasSubstr("conv-2")));
  // Case matters: session ids are case-sensitive, so are their routing keys.
  EXPECT_EQ(CheckSessionRoutingHeader({"CONV-1"}, "conv-1").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SessionRoutingTest, HeaderWithoutSessionIdIsInvalid) {
  const absl::Status status = CheckSessionRoutingHeader({"conv-1"}, "");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("has no session_id"));
}

TEST(SessionRoutingTest, RepeatedHeaderIsInvalidEvenWhenEachValueMatches) {
  const absl::Status status = CheckSessionRoutingHeader({"conv-1", "conv-1"}, "conv-1");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("sent 2 times"));
}

}  // namespace
}  // namespace textgen::server
