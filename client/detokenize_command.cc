// textgen detokenize: token ids -> text.

#include <ostream>

#include "absl/strings/numbers.h"
#include "client/commands.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::client {

constexpr CommandUsage kDetokenizeUsage = {
    "detokenize", "--addr HOST:PORT ID...",
    "Prints the text of the given token ids exactly (no trailing newline)."};

int RunDetokenize(const std::vector<std::string>& args, CommandIo& io) {
  ConnectionFlags connection;
  std::vector<FlagSpec> specs;
  AddConnectionFlags(&connection, &specs);
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed =
      ParseCommandLine(args, specs, kDetokenizeUsage, io, &exit_code);
  if (!parsed) return exit_code;
  if (parsed->positional.empty()) return UsageError(kDetokenizeUsage, "expected token IDs", io);

  textgen::v1::DetokenizeRequest request;
  for (const std::string& arg : parsed->positional) {
    int32_t id;
    if (!absl::SimpleAtoi(arg, &id)) {
      return UsageError(kDetokenizeUsage, "expected a token id (integer), got '" + arg + "'", io);
    }
    request.add_ids(id);
  }
  textgen::v1::DetokenizeResponse response;
  grpc::ClientContext context;
  ConfigureCall(connection, &context);
  grpc::Status status = textgen::v1::TextGeneration::NewStub(MakeChannel(connection))
                            ->Detokenize(&context, request, &response);
  if (!status.ok()) return RpcError(kDetokenizeUsage, "Detokenize", status, io);
  io.out << response.text() << std::flush;
  return kExitOk;
}

}  // namespace textgen::client
