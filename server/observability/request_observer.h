#pragma once

#include <string>

#include "absl/status/status.h"

namespace textgen::server {

// What the server knows about one finished request, from any front end (every outcome,
// including requests refused before any work, rejected by validation or by the scheduler,
// cancelled ones and deadline misses). Built by RequestReport.
struct RequestRecord {
  std::string request_id;    // may be empty when the request failed before it was resolved
  const char* api = "grpc";  // the front end: "grpc" or "http"
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;  // the status message sent to the client (empty on OK)
  double duration_seconds = 0;
  int prompt_tokens = 0;
  int cached_tokens = 0;
  int completion_tokens = 0;
  double time_to_first_token_seconds = -1;  // -1 when no token was produced
};

// Receives a record when a request is done (the metrics count them). Called on the front
// ends' threads; implementations must be thread-safe and must not block.
class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  virtual void OnRequestDone(const RequestRecord& record) = 0;
};

}  // namespace textgen::server
