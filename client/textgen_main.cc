// Dispatch from `textgen <command>` to the command's Run* function.

#include <ostream>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "client/commands.h"

namespace textgen::client {
namespace {

struct CommandEntry {
  absl::string_view name;
  CommandFn run;
  absl::string_view summary;
};

constexpr CommandEntry kCommands[] = {
    {"generate", RunGenerate, "stream a completion of a prompt"},
    {"chat", RunChat, "interactive conversation (Chat RPC, the model's template) on one session"},
    {"tokenize", RunTokenize, "text -> token ids and pieces"},
    {"detokenize", RunDetokenize, "token ids -> text"},
    {"embed", RunEmbed, "one embedding per text (Embed RPC), as JSON lines"},
    {"info", RunInfo, "served model and server limits"},
    {"health", RunHealth, "grpc.health.v1 check (exit 0 when SERVING)"},
    {"delete-session", RunDeleteSession, "free a session's KV cache"},
    {"bench", RunBench, "load generator: throughput, TTFT and ITL percentiles"},
};

void PrintTopUsage(std::ostream& out) {
  out << "Usage: textgen <command> [flags]\n\nCommands:\n";
  for (const CommandEntry& c : kCommands) {
    out << absl::StrFormat("  %-16s %s\n", c.name, c.summary);
  }
  out << "\nRun 'textgen <command> --help' for the command's flags.\n";
}

}  // namespace

int RunTextgen(const std::vector<std::string>& args, CommandIo& io) {
  if (args.empty()) {
    PrintTopUsage(io.err);
    return kExitUsage;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    PrintTopUsage(io.out);
    return kExitOk;
  }
  for (const CommandEntry& c : kCommands) {
    if (c.name == args[0]) {
      return c.run(std::vector<std::string>(args.begin() + 1, args.end()), io);
    }
  }
  io.err << "textgen: unknown command '" << args[0] << "'\n";
  PrintTopUsage(io.err);
  return kExitUsage;
}

}  // namespace textgen::client
