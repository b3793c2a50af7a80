#include "client/prompt_input.h"

#include <istream>
#include <iterator>
#include <ostream>

#include "absl/strings/str_format.h"
#include "model/tokenizer/utf8.h"

namespace textgen::client {
namespace {

// The server refuses --max-request-bytes below this, so smaller requests always fit.
constexpr uint64_t kSmallestServerLimit = 1024;

}  // namespace

std::string ReadTextArgument(const std::string& arg, CommandIo& io) {
  if (arg != "-") return arg;
  if (io.interactive) io.err << "(reading the input from stdin; end it with Ctrl-D)\n";
  return std::string(std::istreambuf_iterator<char>(io.in), {});
}

absl::Status CheckUtf8Input(const std::string& text) { return model::CheckUtf8(text, "input"); }

absl::Status RequestSizeGuard::Check(uint64_t request_bytes) {
  if (request_bytes <= kSmallestServerLimit) return absl::OkStatus();
  const uint64_t limit = Limit();
  if (request_bytes <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "the request would be %d bytes, over the server's limit of %d bytes (%.1f MiB, set by "
      "textgen-server --max-request-bytes); shorten the prompt",
      request_bytes, limit, static_cast<double>(limit) / (1 << 20)));
}

uint64_t RequestSizeGuard::Limit() {
  if (limit_.has_value()) return *limit_;
  textgen::v1::ModelInfo info;
  grpc::ClientContext context;
  ConfigureCall(connection_, &context);
  const grpc::Status status =
      stub_.GetModelInfo(&context, textgen::v1::GetModelInfoRequest(), &info);
  // A server that does not publish its limit (or cannot be asked) has gRPC's default.
  limit_ = status.ok() && info.max_request_bytes() > 0 ? info.max_request_bytes()
                                                       : kGrpcDefaultMaxMessageBytes;
  return *limit_;
}

}  // namespace textgen::client
