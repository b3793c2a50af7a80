#include "client/command_common.h"

#include <cstdlib>
#include <fstream>
#include <ostream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/retry_policy.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace textgen::client {

namespace {}  // namespace

void AddConnectionFlags(ConnectionFlags* flags, std::vector<FlagSpec>* specs) {
  if (const char* key = std::getenv("TEXTGEN_API_KEY"); key != nullptr) flags->api_key = key;
  specs->push_back(
      StringFlag("addr", &flags->addr, "HOST:PORT", "server address (default localhost:50051)"));
  specs->push_back(DurationFlag("timeout", &flags->timeout,
                                "deadline per RPC, e.g. 30s, 2m, 500ms (default: none)"));
  specs->push_back(FileFlag("api-key-file", &flags->api_key, /*trim=*/true,
                            "file holding the API key sent as 'authorization: Bearer KEY' "
                            "(default: $TEXTGEN_API_KEY; a key is never taken on the command "
                            "line, where other users could see it)"));
  specs->push_back(BoolFlag("tls", &flags->tls, "connect with TLS, trusting the system's CAs"));
  specs->push_back(FileFlag("tls-ca", &flags->tls_ca_pem, /*trim=*/false,
                            "PEM CA certificates to trust instead (implies --tls)"));
  specs->push_back(FileFlag("tls-cert", &flags->tls_cert_pem, /*trim=*/false,
                            "PEM client certificate for mutual TLS (implies --tls; needs "
                            "--tls-key)"));
  specs->push_back(
      FileFlag("tls-key", &flags->tls_key_pem, /*trim=*/false, "PEM private key of --tls-cert"));
}

std::shared_ptr<grpc::Channel> MakeChannel(const ConnectionFlags& flags) {
  grpc::ChannelArguments arguments;
  arguments.SetServiceConfigJSON(kRetryServiceConfigJson);
  if (!flags.tls && flags.tls_ca_pem.empty() && flags.tls_cert_pem.empty()) {
    return grpc::CreateCustomChannel(flags.addr, grpc::InsecureChannelCredentials(), arguments);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = flags.tls_ca_pem;
  ssl.pem_cert_chain = flags.tls_cert_pem;
  ssl.pem_private_key = flags.tls_key_pem;
  return grpc::CreateCustomChannel(flags.addr, grpc::SslCredentials(ssl), arguments);
}

void ConfigureCall(const ConnectionFlags& flags, grpc::ClientContext* context,
                   absl::string_view session_id) {
  if (flags.timeout.has_value()) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + *flags.timeout));
  }
  if (!flags.api_key.empty()) context->AddMetadata("authorization", "Bearer " + flags.api_key);
  if (!session_id.empty()) context->AddMetadata("x-session-id", std::string(session_id));
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
  // gRPC's codes are absl's codes (both are the canonical google.rpc.Code numbers).
  std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? absl::StrCat("CODE_", static_cast<int>(code)) : name;
}

int RpcError(const CommandUsage& usage, absl::string_view rpc, const grpc::Status& status,
             CommandIo& io) {
  io.err << "textgen " << usage.name << ": " << rpc
         << " failed: " << StatusCodeName(status.error_code()) << ": " << status.error_message()
         << "\n";
  return kExitRpcError;
}

}  // namespace textgen::client
