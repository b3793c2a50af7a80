// textgen generate: one prompt in, the generated text streamed to stdout.

#include <istream>
#include <iterator>
#include <ostream>

#include "client/commands.h"
#include "client/generate_stream.h"
#include "client/generation_flags.h"

namespace textgen::client {

constexpr CommandUsage kGenerateUsage = {
    "generate", "--addr HOST:PORT [flags] [PROMPT | -]",
    "Streams the continuation of PROMPT to stdout as it is generated (just the text, no\n"
    "trailing newline). With no PROMPT or '-', the prompt is read from stdin. Exit codes:\n"
    "0 ok, 1 RPC error (code and message on stderr), 2 usage error."};

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
  if (parsed->positional.empty() || parsed->positional[0] == "-") {
    if (io.interactive) io.err << "(reading the prompt from stdin; end it with Ctrl-D)\n";
    request.set_text(std::string(std::istreambuf_iterator<char>(io.in), {}));
  } else {
    request.set_text(parsed->positional[0]);
  }
  FillGenerateRequest(generation, &request);

  std::unique_ptr<textgen::v1::TextGeneration::Stub> stub =
      textgen::v1::TextGeneration::NewStub(MakeChannel(connection));
  grpc::ClientContext context;
  ApplyTimeout(connection, &context);
  StreamResult result = StreamGenerate(*stub, context, request, print, io);
  if (!result.status.ok()) {
    if (!print.json && !result.text.empty()) io.err << "\n";  // end the partial line
    return RpcError(kGenerateUsage, "Generate", result.status, io);
  }
  return kExitOk;
}

}  // namespace textgen::client
