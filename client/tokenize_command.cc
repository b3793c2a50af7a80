// textgen tokenize: text -> token ids and the piece each id stands for.

#include <ostream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"
#include "client/commands.h"
#include "client/prompt_input.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::client {

constexpr CommandUsage kTokenizeUsage = {
    "tokenize", "--addr HOST:PORT [--no-bos] [--ids-only] [--parse-special] TEXT | -",
    "Prints one line per token: the id, a tab and the piece as a quoted C-escaped string.\n"
    "With --ids-only, prints the ids on one line separated by spaces. TEXT '-' reads stdin.\n"
    "The text must be UTF-8 and fit the server's request size limit (checked before sending)."};

int RunTokenize(const std::vector<std::string>& args, CommandIo& io) {
  ConnectionFlags connection;
  bool no_bos = false;
  bool ids_only = false;
  bool parse_special = false;
  std::vector<FlagSpec> specs;
  AddConnectionFlags(&connection, &specs);
  specs.push_back(BoolFlag("no-bos", &no_bos, "do not prepend the BOS token"));
  specs.push_back(BoolFlag("ids-only", &ids_only, "print only the ids, on one line"));
  specs.push_back(BoolFlag("parse-special", &parse_special,
                           "control tokens written in TEXT (<|im_start|>) become tokens"));
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed = ParseCommandLine(args, specs, kTokenizeUsage, io, &exit_code);
  if (!parsed) return exit_code;
  if (parsed->positional.size() != 1) {
    return UsageError(kTokenizeUsage,
                      "expected exactly one TEXT argument (quote it, or - for stdin)", io);
  }

  textgen::v1::TokenizeRequest request;
  request.set_text(ReadTextArgument(parsed->positional[0], io));
  if (absl::Status utf8 = CheckUtf8Input(request.text()); !utf8.ok()) {
    return InputError(kTokenizeUsage, utf8.message(), io);
  }
  if (no_bos) request.set_add_bos(false);
  request.set_parse_special(parse_special);
  std::unique_ptr<textgen::v1::TextGeneration::Stub> stub =
      textgen::v1::TextGeneration::NewStub(MakeChannel(connection));
  RequestSizeGuard size_guard(*stub, connection);
  if (absl::Status size = size_guard.Check(request.ByteSizeLong()); !size.ok()) {
    return InputError(kTokenizeUsage, size.message(), io);
  }
  textgen::v1::TokenizeResponse response;
  grpc::ClientContext context;
  ConfigureCall(connection, &context);
  grpc::Status status = stub->Tokenize(&context, request, &response);
  if (!status.ok()) return RpcError(kTokenizeUsage, "Tokenize", status, io);

  if (ids_only) {
    io.out << absl::StrJoin(response.ids(), " ") << "\n";
    return kExitOk;
  }
  for (int i = 0; i < response.ids_size(); ++i) {
    std::string piece = i < response.tokens_size() ? response.tokens(i) : "";
    io.out << response.ids(i) << "\t\"" << absl::CHexEscape(piece) << "\"\n";
  }
  return kExitOk;
}

}  // namespace textgen::client
