#include "client/command_common.h"

#include <ostream>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace textgen::client {

void AddConnectionFlags(ConnectionFlags* flags, std::vector<FlagSpec>* specs) {
  specs->push_back(
      StringFlag("addr", &flags->addr, "HOST:PORT", "server address (default localhost:50051)"));
  specs->push_back(DurationFlag("timeout", &flags->timeout,
                                "deadline per RPC, e.g. 30s, 2m, 500ms (default: none)"));
}

std::shared_ptr<grpc::Channel> MakeChannel(const ConnectionFlags& flags) {
  return grpc::CreateChannel(flags.addr, grpc::InsecureChannelCredentials());
}

void ApplyTimeout(const ConnectionFlags& flags, grpc::ClientContext* context) {
  if (flags.timeout.has_value()) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + *flags.timeout));
  }
}

std::optional<ParsedArgs> ParseCommandLine(const std::vector<std::string>& args,
                                           const std::vector<FlagSpec>& specs,
                                           const CommandUsage& usage, CommandIo& io,
                                           int* exit_code) {
  absl::StatusOr<ParsedArgs> parsed = ParseFlags(args, specs);
  if (!parsed.ok()) {
    *exit_code = UsageError(usage, parsed.status().message(), io);
    return std::nullopt;
  }
  if (parsed->help) {
    io.out << FormatUsage(usage.name, usage.synopsis, usage.description, specs);
    *exit_code = kExitOk;
    return std::nullopt;
  }
  return std::move(*parsed);
}

int UsageError(const CommandUsage& usage, absl::string_view message, CommandIo& io) {
  io.err << "textgen " << usage.name << ": " << message << "\n"
         << "Run 'textgen " << usage.name << " --help' for usage.\n";
  return kExitUsage;
}

int InputError(const CommandUsage& usage, absl::string_view message, CommandIo& io) {
  io.err << "textgen " << usage.name << ": " << message << "\n";
  return kExitUsage;
}

std::string StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return absl::StrCat("CODE_", static_cast<int>(code));
  }
}

int RpcError(const CommandUsage& usage, absl::string_view rpc, const grpc::Status& status,
             CommandIo& io) {
  io.err << "textgen " << usage.name << ": " << rpc
         << " failed: " << StatusCodeName(status.error_code()) << ": " << status.error_message()
         << "\n";
  return kExitRpcError;
}

}  // namespace textgen::client
