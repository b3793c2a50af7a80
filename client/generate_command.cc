// textgen generate: one prompt in, the generated text streamed to stdout.

#include <ostream>

#include "client/commands.h"
#include "client/generate_stream.h"
#include "client/generation_flags.h"
#include "client/prompt_input.h"

namespace textgen::client {

constexpr CommandUsage kGenerateUsage = {
    "generate", "--addr HOST:PORT [flags] [PROMPT | -]",
    "Streams the continuation of PROMPT to stdout as it is generated (just the text, no\n"
    "trailing newline). With no PROMPT or '-', the prompt is read from stdin. The prompt must\n"
    "be UTF-8 and fit the server's request size limit (textgen info: max_request_bytes); both\n"
    "are checked before anything is sent. Exit codes: 0 ok, 1 RPC error (code and message on\n"
    "stderr), 2 usage error or unusable input."};

int RunGenerate(const std::vector<std::string>& args, CommandIo& io) {
  ConnectionFlags connection;
  GenerationFlags generation;
  StreamPrintOptions print;
  std::vector<FlagSpec> specs;
  AddConnectionFlags(&connection, &specs);
  AddGenerationFlags(&generation, &specs);
  specs.push_back(BoolFlag("json", &print.json, "print each response as a JSON line"));
  specs.push_back(
      BoolFlag("verbose", &print.verbose, "finish reason, usage and timings on stderr"));
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed = ParseCommandLine(args, specs, kGenerateUsage, io, &exit_code);
  if (!parsed) return exit_code;
  if (parsed->positional.size() > 1) {
    return UsageError(
        kGenerateUsage,
        "expected one PROMPT argument (quote it), got " + std::to_string(parsed->positional.size()),
        io);
  }

  textgen::v1::GenerateRequest request;
  request.set_text(ReadTextArgument(parsed->positional.empty() ? "-" : parsed->positional[0], io));
  if (absl::Status utf8 = CheckUtf8Input(request.text()); !utf8.ok()) {
    return InputError(kGenerateUsage, utf8.message(), io);
  }
  FillGenerateRequest(generation, &request);

  std::unique_ptr<textgen::v1::TextGeneration::Stub> stub =
      textgen::v1::TextGeneration::NewStub(MakeChannel(connection));
  RequestSizeGuard size_guard(*stub, connection);
  if (absl::Status size = size_guard.Check(request.ByteSizeLong()); !size.ok()) {
    return InputError(kGenerateUsage, size.message(), io);
  }
  grpc::ClientContext context;
  ConfigureCall(connection, &context, request.session_id());
  StreamResult result = StreamGenerate(*stub, context, request, print, io);
  if (!result.status.ok()) {
    if (!print.json && !result.text.empty()) io.err << "\n";  // end the partial line
    return RpcError(kGenerateUsage, "Generate", result.status, io);
  }
  return kExitOk;
}

}  // namespace textgen::client
