// textgen chat: an interactive conversation on one server session, through the Chat RPC.
//
// Each line read becomes a user message; the whole conversation (system message, earlier
// turns and replies) is sent with the chat's session id. The server renders it with the
// model's chat template and reuses the KV cache of everything before the new turn. Works with
// a piped stdin too (no prompts are printed then).
//
// With --tools the model may call them; with --tool-results (a JSON object: tool name ->
// result text) the calls are answered from it and the conversation goes on by itself, a
// scripted tool loop for demos.

#include <istream>
#include <ostream>
#include <random>

#include "absl/strings/str_format.h"
#include "client/commands.h"
#include "client/generate_stream.h"
#include "client/generation_flags.h"
#include "client/prompt_input.h"
#include "nlohmann/json.hpp"

namespace textgen::client {
namespace {

constexpr CommandUsage kChatUsage = {
    "chat", "--addr HOST:PORT [flags]",
    "Reads lines from stdin; each is a user message. The whole conversation goes to the Chat\n"
    "RPC on one session: the server renders it with the model's chat template and reuses its\n"
    "KV cache. The reply streams to stdout and joins the conversation.\n"
    "Commands: /reset (delete the session, start over), /exit (or end of input).\n"
    "Tools: --tools FILE (OpenAI tools JSON), --tool-choice auto|none|required|NAME; calls\n"
    "print as [tool call NAME] ARGUMENTS, reasoning on stderr as [thinking]. --tool-results\n"
    "FILE ({\"NAME\": \"result\"}) answers calls and continues (up to 4 rounds a turn)."};

constexpr int kMaxToolRounds = 4;

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
  ConfigureCall(connection, &context, session_id);
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
  std::string template_name;
  std::string template_variables;
  bool show_prompt = false;
  std::string tools;
  std::string tool_choice = "auto";
  std::string tool_results_text;
  std::vector<FlagSpec> specs;
  AddConnectionFlags(&connection, &specs);
  AddGenerationFlags(&generation, &specs);
  specs.push_back(StringFlag("system", &system_prompt, "TEXT", "a system message to start with"));
  specs.push_back(StringFlag("template", &template_name, "NAME",
                             "a named variant of the model's chat template (e.g. tool_use)"));
  specs.push_back(StringFlag("template-vars", &template_variables, "JSON",
                             "template variables, e.g. '{\"enable_thinking\": false}'"));
  specs.push_back(FileFlag("tools", &tools, /*trim=*/false,
                           "tools the model may call: a JSON array in OpenAI's format"));
  specs.push_back(StringFlag("tool-choice", &tool_choice, "auto|none|required|NAME",
                             "whether (or which tool) the model must call"));
  specs.push_back(FileFlag("tool-results", &tool_results_text, /*trim=*/false,
                           "answers to calls, a JSON object {\"NAME\": \"result\"}: the "
                           "conversation goes on by itself"));
  specs.push_back(BoolFlag("show-prompt", &show_prompt,
                           "print each rendered prompt (what the model reads) on stderr"));
  specs.push_back(
      BoolFlag("verbose", &print.verbose, "finish reason, usage and timings on stderr"));
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed = ParseCommandLine(args, specs, kChatUsage, io, &exit_code);
  if (!parsed) return exit_code;
  if (!parsed->positional.empty()) {
    return UsageError(kChatUsage, "unexpected argument '" + parsed->positional[0] + "'", io);
  }
  if (show_prompt) generation.echo = true;
  print.prompt_to_err = generation.echo;
  nlohmann::json tool_results = nlohmann::json::object();
  if (!tool_results_text.empty()) {
    tool_results = nlohmann::json::parse(tool_results_text, nullptr, false);
    if (!tool_results.is_object()) {
      return UsageError(kChatUsage, "--tool-results must be a JSON object {\"NAME\": \"result\"}",
                        io);
    }
  }
  textgen::v1::ToolChoice choice;
  if (tool_choice == "none") {
    choice.set_mode(textgen::v1::ToolChoice::TOOL_CHOICE_NONE);
  } else if (tool_choice == "required") {
    choice.set_mode(textgen::v1::ToolChoice::TOOL_CHOICE_REQUIRED);
  } else if (tool_choice != "auto") {
    choice.set_mode(textgen::v1::ToolChoice::TOOL_CHOICE_FUNCTION);
    choice.set_function_name(tool_choice);
  }

  std::unique_ptr<textgen::v1::TextGeneration::Stub> stub =
      textgen::v1::TextGeneration::NewStub(MakeChannel(connection));
  RequestSizeGuard size_guard(*stub, connection);
  // A --session given on the command line is used as is (and kept on exit).
  bool own_session = generation.session_id.empty();
  if (own_session) generation.session_id = NewSessionId();
  const auto add_message = [](textgen::v1::ChatRequest& request, const std::string& role,
                              const std::string& content) {
    textgen::v1::ChatMessage* message = request.add_messages();
    message->set_role(role);
    message->set_content(content);
  };
  textgen::v1::ChatRequest conversation;
  if (!system_prompt.empty()) add_message(conversation, "system", system_prompt);
  const textgen::v1::ChatRequest start = conversation;
  int result = kExitOk;
  std::string line;
  while (true) {
    if (io.interactive) io.err << "> " << std::flush;
    if (!std::getline(io.in, line) || line == "/exit") break;
    if (line == "/reset") {
      DeleteSession(*stub, connection, generation.session_id, io);
      generation.session_id = NewSessionId();
      conversation = start;
      if (io.interactive) io.err << "[new session " << generation.session_id << "]\n";
      continue;
    }
    if (line.empty()) continue;
    // A bad line is refused before sending and leaves the conversation as it was.
    if (absl::Status utf8 = CheckUtf8Input(line); !utf8.ok()) {
      io.err << "textgen chat: line not sent: " << utf8.message() << "\n";
      result = kExitUsage;
      continue;
    }
    textgen::v1::ChatRequest turn = conversation;
    add_message(turn, "user", line);
    bool sent = false;
    for (int round = 0; round <= kMaxToolRounds; ++round) {
      textgen::v1::ChatRequest request = turn;
      FillChatRequest(generation, &request);
      request.set_template_name(template_name);
      request.set_template_variables_json(template_variables);
      request.set_tools_json(tools);
      // After the first round the calls were answered: let the model write its reply.
      if (round == 0) *request.mutable_tool_choice() = choice;
      if (absl::Status size = size_guard.Check(request.ByteSizeLong()); !size.ok()) {
        io.err << "textgen chat: " << size.message() << " (or /reset)\n";
        result = kExitUsage;
        break;
      }
      grpc::ClientContext context;
      ConfigureCall(connection, &context, request.session_id());
      StreamResult reply = StreamChat(*stub, context, request, print, io);
      io.out << "\n" << std::flush;
      if (!reply.status.ok()) {
        // The turn is dropped from the conversation; the user may retry or /reset.
        result = RpcError(kChatUsage, "Chat", reply.status, io);
        break;
      }
      sent = true;
      textgen::v1::ChatMessage* answer = turn.add_messages();
      answer->set_role("assistant");
      answer->set_content(reply.text);
      answer->set_reasoning_content(reply.reasoning);
      if (reply.finish.tool_calls().empty()) break;
      nlohmann::json calls = nlohmann::json::array();
      for (const textgen::v1::ToolCall& call : reply.finish.tool_calls()) {
        calls.push_back(
            {{"id", call.id()},
             {"type", "function"},
             {"function", {{"name", call.name()}, {"arguments", call.arguments_json()}}}});
      }
      answer->set_tool_calls_json(calls.dump());
      if (tool_results.empty() || round == kMaxToolRounds) break;
      // The scripted loop: each call answered from --tool-results.
      for (const textgen::v1::ToolCall& call : reply.finish.tool_calls()) {
        const auto found = tool_results.find(call.name());
        const std::string result_text =
            found == tool_results.end()
                ? "error: no result for " + call.name()
                : (found->is_string() ? found->get<std::string>() : found->dump());
        io.err << "[tool result " << call.name() << "] " << result_text << "\n";
        textgen::v1::ChatMessage* tool = turn.add_messages();
        tool->set_role("tool");
        tool->set_name(call.name());
        tool->set_tool_call_id(call.id());
        tool->set_content(result_text);
      }
    }
    if (!sent) continue;
    result = kExitOk;
    conversation = turn;
  }
  if (own_session) DeleteSession(*stub, connection, generation.session_id, io);
  return result;
}

}  // namespace textgen::client
