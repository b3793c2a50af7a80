#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client/bench_runner.h"

namespace textgen::client {

// One worker's keep-alive connection to the OpenAI-compatible HTTP API, for `textgen bench
// --http`: each request is a streaming POST /v1/completions with the prompt as token ids,
// ignore_eos and stream_options.include_usage. Timed like the gRPC path: TTFT at the first
// socket read that carries a text delta, one inter-token gap per such read. Not thread-safe.
class HttpBenchClient {
 public:
  explicit HttpBenchClient(const std::string& address);  // HOST:PORT
  ~HttpBenchClient();
  RequestRecord Run(const BenchOptions& options, const std::vector<int32_t>& prompt, int max_tokens,
                    uint64_t seed);

 private:
  struct Connection;
  std::unique_ptr<Connection> connection_;
};

}  // namespace textgen::client
