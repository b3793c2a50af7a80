// textgen embed: one embedding per TEXT argument (or per stdin line), as JSON lines.

#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>

#include "client/commands.h"
#include "client/prompt_input.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::client {

constexpr CommandUsage kEmbedUsage = {
    "embed", "--addr HOST:PORT [--dimensions N] [--no-normalize] TEXT... | -",
    "Prints one JSON line per input: {\"index\": i, \"embedding\": [...]} (float32 values, in the\n"
    "shortest form that reads back the same), then a line with the prompt tokens used. '-'\n"
    "reads one input per line of stdin. Inputs are embedded together (one Embed RPC); the\n"
    "pooling is the model's (textgen info shows it)."};

int RunEmbed(const std::vector<std::string>& args, CommandIo& io) {
  ConnectionFlags connection;
  int64_t dimensions = 0;
  bool no_normalize = false;
  std::vector<FlagSpec> specs;
  AddConnectionFlags(&connection, &specs);
  specs.push_back(IntFlag("dimensions", &dimensions, 0, 1 << 20,
                          "keep the first N values of each embedding (then normalize); 0 = all"));
  specs.push_back(BoolFlag("no-normalize", &no_normalize, "print the raw pooled vectors"));
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed = ParseCommandLine(args, specs, kEmbedUsage, io, &exit_code);
  if (!parsed) return exit_code;
  if (parsed->positional.empty()) {
    return UsageError(kEmbedUsage, "expected at least one TEXT argument (or - for stdin)", io);
  }

  textgen::v1::EmbedRequest request;
  for (const std::string& arg : parsed->positional) {
    if (arg == "-") {
      std::istringstream lines(ReadTextArgument("-", io));
      for (std::string line; std::getline(lines, line);) {
        if (!line.empty()) request.add_inputs()->set_text(line);
      }
    } else {
      request.add_inputs()->set_text(arg);
    }
  }
  for (const textgen::v1::EmbedInput& input : request.inputs()) {
    if (absl::Status utf8 = CheckUtf8Input(input.text()); !utf8.ok()) {
      return InputError(kEmbedUsage, utf8.message(), io);
    }
  }
  request.set_dimensions(static_cast<uint32_t>(dimensions));
  if (no_normalize) request.set_normalize(false);
  std::unique_ptr<textgen::v1::TextGeneration::Stub> stub =
      textgen::v1::TextGeneration::NewStub(MakeChannel(connection));
  RequestSizeGuard size_guard(*stub, connection);
  if (absl::Status size = size_guard.Check(request.ByteSizeLong()); !size.ok()) {
    return InputError(kEmbedUsage, size.message(), io);
  }
  textgen::v1::EmbedResponse response;
  grpc::ClientContext context;
  ConfigureCall(connection, &context);
  grpc::Status status = stub->Embed(&context, request, &response);
  if (!status.ok()) return RpcError(kEmbedUsage, "Embed", status, io);

  for (int i = 0; i < response.embeddings_size(); ++i) {
    std::ostringstream line;
    line << std::setprecision(9) << "{\"index\": " << i << ", \"embedding\": [";
    const auto& values = response.embeddings(i).values();
    for (int j = 0; j < values.size(); ++j) line << (j > 0 ? ", " : "") << values[j];
    line << "]}";
    io.out << line.str() << "\n";
  }
  io.out << "{\"prompt_tokens\": " << response.prompt_tokens() << ", \"pooling\": \""
         << response.pooling() << "\"}\n";
  return kExitOk;
}

}  // namespace textgen::client
