// textgen info: what model the server runs and with which limits.

#include <ostream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/commands.h"
#include "google/protobuf/util/json_util.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::client {
namespace {

constexpr CommandUsage kInfoUsage = {
    "info", "--addr HOST:PORT [--json]",
    "Prints the served model's GetModelInfo: name, architecture, sizes, dtypes, special\n"
    "tokens and server limits."};

void Line(std::ostream& out, absl::string_view key, const std::string& value) {
  out << absl::StrFormat("%-22s %s\n", absl::StrCat(key, ":"), value);
}

std::string TokenText(int32_t id, const std::string& text) {
  if (id < 0) return "(none)";
  return absl::StrFormat("%d \"%s\"", id, absl::CHexEscape(text));
}

}  // namespace

int RunInfo(const std::vector<std::string>& args, CommandIo& io) {
  ConnectionFlags connection;
  bool json = false;
  std::vector<FlagSpec> specs;
  AddConnectionFlags(&connection, &specs);
  specs.push_back(BoolFlag("json", &json, "print the ModelInfo message as JSON"));
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed = ParseCommandLine(args, specs, kInfoUsage, io, &exit_code);
  if (!parsed) return exit_code;
  if (!parsed->positional.empty()) {
    return UsageError(kInfoUsage, "unexpected argument '" + parsed->positional[0] + "'", io);
  }
  textgen::v1::ModelInfo info;
  grpc::ClientContext context;
  ConfigureCall(connection, &context);
  grpc::Status status = textgen::v1::TextGeneration::NewStub(MakeChannel(connection))
                            ->GetModelInfo(&context, textgen::v1::GetModelInfoRequest(), &info);
  if (!status.ok()) return RpcError(kInfoUsage, "GetModelInfo", status, io);

  if (json) {
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    std::string text;
    (void)google::protobuf::util::MessageToJsonString(info, &text, options);
    io.out << text << "\n";
    return kExitOk;
  }
  std::ostream& out = io.out;
  Line(out, "name", info.name());
  Line(out, "architecture", info.architecture());
  Line(out, "parameters",
       absl::StrFormat("%d (%.1fM)", info.parameters(), info.parameters() / 1e6));
  Line(out, "vocab_size", absl::StrCat(info.vocab_size()));
  Line(out, "context_length", absl::StrCat(info.context_length()));
  Line(out, "layers", absl::StrCat(info.n_layers()));
  Line(out, "dim", absl::StrCat(info.dim()));
  Line(out, "heads", absl::StrFormat("%d (kv %d)", info.n_heads(), info.n_kv_heads()));
  Line(out, "file_dtype", info.file_dtype());
  Line(out, "compute_dtype", info.compute_dtype());
  Line(out, "bos", TokenText(info.special_tokens().bos_id(), info.special_tokens().bos()));
  Line(out, "eos", TokenText(info.special_tokens().eos_id(), info.special_tokens().eos()));
  std::vector<std::string> eog;
  const textgen::v1::SpecialTokens& special = info.special_tokens();
  for (int i = 0; i < special.end_of_generation_ids_size(); ++i) {
    eog.push_back(TokenText(special.end_of_generation_ids(i), i < special.end_of_generation_size()
                                                                  ? special.end_of_generation(i)
                                                                  : ""));
  }
  Line(out, "end_of_generation", eog.empty() ? "(none)" : absl::StrJoin(eog, ", "));
  std::vector<std::string> templates;
  for (const std::string& name : info.chat_templates()) {
    templates.push_back(name.empty() ? absl::StrCat("default (", info.chat_template_source(), ")")
                                     : name);
  }
  Line(out, "chat_templates",
       templates.empty() ? "(none: Chat needs --chat-template)" : absl::StrJoin(templates, ", "));
  Line(out, "tool_call_format",
       info.tool_call_format().empty() ? "(none)" : info.tool_call_format());
  Line(out, "reasoning_tag", info.reasoning_tag().empty() ? "(none)" : info.reasoning_tag());
  Line(out, "pooling", info.pooling());
  Line(out, "max_new_tokens_limit", absl::StrCat(info.max_new_tokens_limit()));
  Line(out, "max_batch_size", absl::StrCat(info.max_batch_size()));
  Line(out, "max_request_bytes",
       info.max_request_bytes() > 0
           ? absl::StrFormat("%d (%.1f MiB)", info.max_request_bytes(),
                             static_cast<double>(info.max_request_bytes()) / (1 << 20))
           : "(not published; gRPC's default is 4194304)");
  Line(out, "model_path",
       info.model_path().empty() ? "(not published; server flag --expose-model-path)"
                                 : info.model_path());
  return kExitOk;
}

}  // namespace textgen::client
