#pragma once

// The retry policy of every textgen CLI channel, as a gRPC service config. A call refused with
// UNAVAILABLE (a draining replica, a replica that just went away, a balancer with no replica up
// yet) is sent again, up to 5 attempts in all, after jittered exponential backoff (at most
// 0.25, 0.5, 1, 2 s). gRPC retries only calls that have received nothing yet, so a stream that
// already delivered tokens is never replayed. docs/scaling.md documents the same policy for
// other clients.

namespace textgen::client {

inline constexpr char kRetryServiceConfigJson[] = R"json({
  "methodConfig": [{
    "name": [{"service": "textgen.v1.TextGeneration"}],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "0.25s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
})json";

}  // namespace textgen::client
