// absl::Status -> grpc::Status at the gRPC edge.
#include "server/grpc/status_mapping.h"

#include "gtest/gtest.h"

namespace textgen::server {
namespace {

TEST(StatusMappingTest, KeepsCodeAndMessage) {
  const grpc::Status s = ToGrpcStatus(absl::OutOfRangeError("too long"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(s.error_message(), "too long");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("x")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ToGrpcStatus(absl::ResourceExhaustedError("x")).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

}  // namespace
}  // namespace textgen::server
