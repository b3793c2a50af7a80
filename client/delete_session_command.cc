// textgen delete-session: frees a session's KV cache on the server.

#include <ostream>

#include "client/commands.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::client {

constexpr CommandUsage kDeleteSessionUsage = {
    "delete-session", "--addr HOST:PORT ID",
    "Frees the KV cache of session ID and prints how many tokens were freed.\n"
    "Exits 1 with NOT_FOUND when the server has no such session."};

int RunDeleteSession(const std::vector<std::string>& args, CommandIo& io) {
  ConnectionFlags connection;
  std::vector<FlagSpec> specs;
  AddConnectionFlags(&connection, &specs);
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed =
      ParseCommandLine(args, specs, kDeleteSessionUsage, io, &exit_code);
  if (!parsed) return exit_code;
  if (parsed->positional.size() != 1) {
    return UsageError(kDeleteSessionUsage, "expected exactly one session ID", io);
  }
  textgen::v1::DeleteSessionRequest request;
  request.set_session_id(parsed->positional[0]);
  textgen::v1::DeleteSessionResponse response;
  grpc::ClientContext context;
  ConfigureCall(connection, &context, request.session_id());
  grpc::Status status = textgen::v1::TextGeneration::NewStub(MakeChannel(connection))
                            ->DeleteSession(&context, request, &response);
  if (!status.ok()) return RpcError(kDeleteSessionUsage, "DeleteSession", status, io);
  io.out << "freed_tokens: " << response.freed_tokens() << "\n";
  return kExitOk;
}

}  // namespace textgen::client
