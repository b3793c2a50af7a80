#pragma once

#include <string>

#include "absl/status/status.h"

namespace textgen::server {

// What the service knows about one finished Generate RPC (every outcome, including requests
// rejected by validation, by the scheduler, cancelled ones and deadline misses).
struct RequestRecord {
  std::string request_id;
  const char* api = "grpc";  // the front end: "grpc" or "http"  // may be empty when validation
                             // failed before it was resolved
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;  // the status message sent to the client (empty on OK)
  double duration_seconds = 0;
  int prompt_tokens = 0;
  int cached_tokens = 0;
  int completion_tokens = 0;
  double time_to_first_token_seconds = -1;  // -1 when no token was produced
};

// Receives a record when a Generate RPC is done (the metrics count them). Called on gRPC
// threads from OnDone; implementations must be thread-safe and must not block.
class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  virtual void OnRequestDone(const RequestRecord& record) = 0;
};

}  // namespace textgen::server
