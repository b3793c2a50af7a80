#pragma once

// The retry policy of every textgen CLI channel, as a gRPC service config. A call refused with
// UNAVAILABLE (a draining replica, a replica that just went away, a balancer with no replica up
// yet) is sent again, up to 5 attempts in all, after jittered exponential backoff (at most
// 0.25, 0.5, 1, 2 s). gRPC retries only calls that have received nothing yet, so a stream that
// already delivered tokens is never replayed, and never a call the client cancelled itself.
// CANCELLED is retried too: gRPC core before the fix of grpc/grpc#41785 (Debian's 1.51 included)
// ends a call that reaches a server in the instant its shutdown begins with CANCELLED instead
// of UNAVAILABLE; textgen never sends CANCELLED for a call it started. docs/scaling.md documents
// the same policy for other clients.

namespace textgen::client {

inline constexpr char kRetryServiceConfigJson[] = R"json({
  "methodConfig": [{
    "name": [{"service": "textgen.v1.TextGeneration"}],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "0.25s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE", "CANCELLED"]
    }
  }]
})json";

}  // namespace textgen::client
