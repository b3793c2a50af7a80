// textgen chat: an interactive conversation on one server session.
//
// Each line read is appended to the conversation and the whole conversation is sent as the
// prompt with the chat's session id, so the server reuses the KV cache of everything before
// the new line. Works with a piped stdin too (no prompts are printed then).

#include <istream>
#include <ostream>
#include <random>

#include "absl/strings/str_format.h"
#include "client/commands.h"
#include "client/generate_stream.h"
#include "client/generation_flags.h"
#include "client/prompt_input.h"

namespace textgen::client {
namespace {

constexpr CommandUsage kChatUsage = {
    "chat", "--addr HOST:PORT [flags]",
    "Reads lines from stdin; each is appended to the conversation (as <user-prefix>LINE\\n\n"
    "<assistant-prefix>) and the whole conversation is sent as the prompt on one session, so\n"
    "the server reuses its KV cache. The reply streams to stdout and is appended too.\n"
    "Commands: /reset (delete the session, start over), /exit (or end of input)."};

// A fresh random session id, e.g. "chat-3f9a0c1d2e4b5a69".
std::string NewSessionId() {
  std::random_device device;
  uint64_t bits = (static_cast<uint64_t>(device()) << 32) ^ device();
  return absl::StrFormat("chat-%016x", bits);
}

// Frees the session on the server; NOT_FOUND just means nothing was cached yet.
void DeleteSession(textgen::v1::TextGeneration::StubInterface& stub,
                   const ConnectionFlags& connection, const std::string& session_id,
                   CommandIo& io) {
  textgen::v1::DeleteSessionRequest request;
  request.set_session_id(session_id);
  textgen::v1::DeleteSessionResponse response;
  grpc::ClientContext context;
  ApplyTimeout(connection, &context);
  grpc::Status status = stub.DeleteSession(&context, request, &response);
  if (!status.ok() && status.error_code() != grpc::StatusCode::NOT_FOUND) {
    RpcError(kChatUsage, "DeleteSession", status, io);
  }
}

}  // namespace

int RunChat(const std::vector<std::string>& args, CommandIo& io) {
  ConnectionFlags connection;
  GenerationFlags generation;
  StreamPrintOptions print;
  std::string system_prompt;
  std::string user_prefix;
  std::string assistant_prefix;
  std::vector<FlagSpec> specs;
  AddConnectionFlags(&connection, &specs);
  AddGenerationFlags(&generation, &specs);
  specs.push_back(
      StringFlag("system", &system_prompt, "TEXT", "text the conversation starts with"));
  specs.push_back(StringFlag("user-prefix", &user_prefix, "STR", "put before each user line"));
  specs.push_back(
      StringFlag("assistant-prefix", &assistant_prefix, "STR", "put before each reply"));
  specs.push_back(
      BoolFlag("verbose", &print.verbose, "finish reason, usage and timings on stderr"));
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed = ParseCommandLine(args, specs, kChatUsage, io, &exit_code);
  if (!parsed) return exit_code;
  if (!parsed->positional.empty()) {
    return UsageError(kChatUsage, "unexpected argument '" + parsed->positional[0] + "'", io);
  }

  std::unique_ptr<textgen::v1::TextGeneration::Stub> stub =
      textgen::v1::TextGeneration::NewStub(MakeChannel(connection));
  RequestSizeGuard size_guard(*stub, connection);
  // A --session given on the command line is used as is (and kept on exit).
  bool own_session = generation.session_id.empty();
  if (own_session) generation.session_id = NewSessionId();
  std::string conversation = system_prompt;
  int result = kExitOk;
  std::string line;
  while (true) {
    if (io.interactive) io.err << "> " << std::flush;
    if (!std::getline(io.in, line) || line == "/exit") break;
    if (line == "/reset") {
      DeleteSession(*stub, connection, generation.session_id, io);
      generation.session_id = NewSessionId();
      conversation = system_prompt;
      if (io.interactive) io.err << "[new session " << generation.session_id << "]\n";
      continue;
    }
    if (line.empty()) continue;
    // A bad line is refused before sending and leaves the conversation as it was.
    if (absl::Status utf8 = CheckUtf8Input(line); !utf8.ok()) {
      io.err << "textgen chat: " << utf8.message() << " of the line; not sent\n";
      result = kExitUsage;
      continue;
    }
    std::string prompt = conversation + user_prefix + line + "\n" + assistant_prefix;
    textgen::v1::GenerateRequest request;
    request.set_text(prompt);
    FillGenerateRequest(generation, &request);
    if (absl::Status size = size_guard.Check(request.ByteSizeLong()); !size.ok()) {
      io.err << "textgen chat: " << size.message() << " (or /reset)\n";
      result = kExitUsage;
      continue;
    }
    grpc::ClientContext context;
    ApplyTimeout(connection, &context);
    StreamResult reply = StreamGenerate(*stub, context, request, print, io);
    io.out << "\n" << std::flush;
    if (!reply.status.ok()) {
      // The turn is dropped from the conversation; the user may retry or /reset.
      result = RpcError(kChatUsage, "Generate", reply.status, io);
      continue;
    }
    result = kExitOk;
    conversation = prompt + reply.text + "\n";
  }
  if (own_session) DeleteSession(*stub, connection, generation.session_id, io);
  return result;
}

}  // namespace textgen::client
