#pragma once

// Text a user hands the CLI (an argument, or standard input for "-"), checked before anything
// is sent: protobuf refuses to serialize a string field that is not UTF-8, and a request
// larger than the server's --max-request-bytes is refused by gRPC with a message that does
// not say which limit applies.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/command_common.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::client {

// gRPC's default receive limit, assumed when the server does not publish its own.
inline constexpr uint64_t kGrpcDefaultMaxMessageBytes = 4u << 20;

// The TEXT argument of a command: `arg` itself, or all of io.in when `arg` is "-". Says on
// io.err where a terminal's input is expected.
std::string ReadTextArgument(const std::string& arg, CommandIo& io);

// INVALID_ARGUMENT "input is not valid UTF-8 (invalid byte 0xNN at byte offset N)" unless `text` is
// valid UTF-8.
absl::Status CheckUtf8Input(const std::string& text);

// Checks request sizes against the server's published limit (GetModelInfo.max_request_bytes),
// asking the server at most once and only for a request that could exceed the smallest limit
// a server accepts. Not thread-safe.
class RequestSizeGuard {
 public:
  RequestSizeGuard(textgen::v1::TextGeneration::StubInterface& stub,
                   const ConnectionFlags& connection)
      : stub_(stub), connection_(connection) {}

  // RESOURCE_EXHAUSTED naming both sizes when `request_bytes` is over the limit.
  absl::Status Check(uint64_t request_bytes);

 private:
  uint64_t Limit();

  textgen::v1::TextGeneration::StubInterface& stub_;
  const ConnectionFlags& connection_;
  std::optional<uint64_t> limit_;
};

}  // namespace textgen::client
