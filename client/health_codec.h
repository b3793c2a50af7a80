#pragma once

// Hand encoding of the two grpc.health.v1 messages (see health_command.cc for why).

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace textgen::client {

inline constexpr int kServingStatusServing = 1;

// HealthCheckRequest{service}: empty for an empty service name.
std::string EncodeHealthCheckRequest(absl::string_view service);

// HealthCheckResponse -> its status enum value (0 when absent); skips unknown fields.
// InvalidArgument on malformed bytes.
absl::StatusOr<int> DecodeHealthCheckResponse(absl::string_view bytes);

// "UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "STATUS_<n>".
std::string ServingStatusName(int status);

}  // namespace textgen::client
