#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace textgen::server {

// The one place absl::Status becomes grpc::Status: same code, same message (the codes share
// their numbering). Pure function, thread-safe.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace textgen::server
