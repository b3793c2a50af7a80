#include "server/grpc/status_mapping.h"

#include <string>

namespace textgen::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  // Codes outside gRPC's range cannot come from absl's canonical set; be safe anyway.
  const grpc::StatusCode grpc_code = (code > 0 && code <= grpc::StatusCode::UNAUTHENTICATED)
                                         ? static_cast<grpc::StatusCode>(code)
                                         : grpc::StatusCode::UNKNOWN;
  return grpc::Status(grpc_code, std::string(status.message()));
}

}  // namespace textgen::server
