#include "server/http/openai/responses_request.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/base/status_macros.h"

namespace textgen::server::http {
namespace {

// Tool types of OpenAI's hosted tools: they run on OpenAI's servers, so textgen refuses them
// by name rather than letting a model pretend to have searched.
constexpr const char* kHostedToolTypes[] = {"web_search",
                                            "web_search_preview",
                                            "web_search_preview_2025_03_11",
                                            "file_search",
                                            "computer_use_preview",
                                            "computer_use",
                                            "code_interpreter",
                                            "image_generation",
                                            "mcp",
                                            "local_shell",
                                            "shell",
                                            "apply_patch",
                                            "custom"};

// Input item types that only OpenAI's hosted tools produce.
constexpr const char* kHostedItemTypes[] = {
    "web_search_call",      "file_search_call",        "computer_call",
    "computer_call_output", "code_interpreter_call",   "image_generation_call",
    "local_shell_call",     "local_shell_call_output", "mcp_call",
    "mcp_list_tools",       "mcp_approval_request",    "mcp_approval_response",
    "custom_tool_call",     "custom_tool_call_output", "shell_call",
    "shell_call_output",    "apply_patch_call",        "apply_patch_call_output"};

template <size_t N>
bool OneOf(const std::string& value, const char* const (&list)[N]) {
  for (const char* item : list) {
    if (value == item) return true;
  }
  return false;
}

// Responses' text parts; an assistant's may be refusals too.
absl::StatusOr<std::string> ContentText(const Json& content, const std::string& field,
                                        bool assistant) {
  return TextParts(content, field, {"input_text", "output_text", "text"}, assistant);
}

// Turns `input` items into chat messages, in order.
class InputReader {
 public:
  explicit InputReader(v1::ChatRequest& chat) : chat_(chat) {}

  absl::Status Read(const Json& input) {
    if (input.is_string()) {
      v1::ChatMessage* m = chat_.add_messages();
      m->set_role("user");
      m->set_content(input.get<std::string>());
      return absl::OkStatus();
    }
    if (!input.is_array()) return WrongType("input", "a string or an array of items", input);
    for (size_t i = 0; i < input.size(); ++i) {
      TEXTGEN_RETURN_IF_ERROR(Item(input[i], absl::StrCat("input[", i, "]")));
    }
    FlushCalls();
    return absl::OkStatus();
  }

 private:
  absl::Status Item(const Json& item, const std::string& field) {
    if (!item.is_object()) return WrongType(field, "an object", item);
    const Fields f(item);
    std::optional<std::string> type;
    TEXTGEN_RETURN_IF_ERROR(f.String("type", type));
    if (!type || *type == "message") return Message(f, field);
    if (*type == "function_call") return FunctionCall(f, field);
    FlushCalls();
    if (*type == "function_call_output") return FunctionCallOutput(f, field);
    if (*type == "reasoning") return Reasoning(f, field);
    if (*type == "item_reference") {
      return FieldError(field, absl::StrCat(field,
                                            " is an item_reference: textgen does not keep items "
                                            "by id; send the item itself or use "
                                            "previous_response_id"));
    }
    if (OneOf(*type, kHostedItemTypes)) {
      return FieldError(field, absl::StrCat(field, ".type \"", *type,
                                            "\" belongs to a hosted OpenAI tool; textgen serves "
                                            "function tools only"));
    }
    return FieldError(field, absl::StrCat(field, ".type \"", type->substr(0, 64),
                                          "\" is not one of \"message\", \"function_call\", "
                                          "\"function_call_output\", \"reasoning\""));
  }

  absl::Status Message(const Fields& f, const std::string& field) {
    std::optional<std::string> role;
    TEXTGEN_RETURN_IF_ERROR(f.String("role", role));
    if (!role) return FieldError(field, absl::StrCat(field, ".role is missing"));
    if (*role != "user" && *role != "assistant" && *role != "system" && *role != "developer") {
      return FieldError(field, absl::StrCat(field, ".role \"", role->substr(0, 64),
                                            "\" is not one of \"user\", \"assistant\", "
                                            "\"system\", \"developer\""));
    }
    const Json* content = f.Find("content");
    if (content == nullptr) return FieldError(field, absl::StrCat(field, ".content is missing"));
    const bool assistant = *role == "assistant";
    absl::StatusOr<std::string> text = ContentText(*content, field + ".content", assistant);
    if (!text.ok()) return text.status();
    FlushCalls();
    v1::ChatMessage* m = chat_.add_messages();
    // OpenAI's "developer" role is the system role of reasoning models; templates know "system".
    m->set_role(*role == "developer" ? "system" : *role);
    m->set_content(*std::move(text));
    if (assistant) {
      m->set_reasoning_content(std::move(reasoning_));
      reasoning_.clear();
      // Calls right after this message belong to its turn.
      assistant_ = m;
    }
    return absl::OkStatus();
  }

  absl::Status FunctionCall(const Fields& f, const std::string& field) {
    std::optional<std::string> call_id, name, arguments;
    TEXTGEN_RETURN_IF_ERROR(f.String("call_id", call_id));
    TEXTGEN_RETURN_IF_ERROR(f.String("name", name));
    TEXTGEN_RETURN_IF_ERROR(f.String("arguments", arguments));
    if (!call_id || call_id->empty()) {
      return FieldError(field, absl::StrCat(field, ".call_id is missing"));
    }
    if (!name || name->empty()) return FieldError(field, absl::StrCat(field, ".name is missing"));
    if (assistant_ == nullptr) {
      assistant_ = chat_.add_messages();
      assistant_->set_role("assistant");
      assistant_->set_reasoning_content(std::move(reasoning_));
      reasoning_.clear();
    }
    calls_.push_back(
        Json{{"id", *call_id},
             {"type", "function"},
             {"function", {{"name", *name}, {"arguments", arguments.value_or("{}")}}}});
    call_names_.emplace_back(*call_id, *name);
    return absl::OkStatus();
  }

  absl::Status FunctionCallOutput(const Fields& f, const std::string& field) {
    std::optional<std::string> call_id;
    TEXTGEN_RETURN_IF_ERROR(f.String("call_id", call_id));
    if (!call_id || call_id->empty()) {
      return FieldError(field, absl::StrCat(field, ".call_id is missing"));
    }
    const Json* output = f.Find("output");
    if (output == nullptr) return FieldError(field, absl::StrCat(field, ".output is missing"));
    absl::StatusOr<std::string> text = ContentText(*output, field + ".output", false);
    if (!text.ok()) return text.status();
    v1::ChatMessage* m = chat_.add_messages();
    m->set_role("tool");
    m->set_tool_call_id(*call_id);
    m->set_content(*std::move(text));
    // Templates that name the tool in its result read `name` (Llama 3.x's ipython turns do not
    // need it; others do): the call it answers, when this request carries it.
    for (auto it = call_names_.rbegin(); it != call_names_.rend(); ++it) {
      if (it->first == *call_id) {
        m->set_name(it->second);
        break;
      }
    }
    return absl::OkStatus();
  }

  // A reasoning item: its text (reasoning_text parts, else the summary) is the next assistant
  // turn's reasoning_content.
  absl::Status Reasoning(const Fields& f, const std::string& field) {
    std::vector<std::string> texts;
    for (const char* list : {"content", "summary"}) {
      const Json* parts = f.Find(list);
      if (parts == nullptr) continue;
      if (!parts->is_array()) return WrongType(absl::StrCat(field, ".", list), "an array", *parts);
      for (size_t j = 0; j < parts->size(); ++j) {
        const Json& part = (*parts)[j];
        const std::string part_field = absl::StrCat(field, ".", list, "[", j, "]");
        if (!part.is_object()) return WrongType(part_field, "an object", part);
        std::optional<std::string> text;
        TEXTGEN_RETURN_IF_ERROR(Fields(part).String("text", text));
        if (!text) return FieldError(part_field, absl::StrCat(part_field, ".text is missing"));
        texts.push_back(*std::move(text));
      }
      if (!texts.empty()) break;  // the full text when it is there, not also its summary
    }
    reasoning_ = absl::StrJoin(texts, "\n");
    return absl::OkStatus();
  }

  // The calls read since the last assistant message become its tool_calls.
  void FlushCalls() {
    if (assistant_ != nullptr && !calls_.empty()) assistant_->set_tool_calls_json(calls_.dump());
    calls_ = Json::array();
    assistant_ = nullptr;
  }

  v1::ChatRequest& chat_;
  v1::ChatMessage* assistant_ = nullptr;  // the open assistant turn, if any
  Json calls_ = Json::array();            // its function calls so far (chat's tool_calls)
  std::string reasoning_;                 // of the next assistant turn
  std::vector<std::pair<std::string, std::string>> call_names_;  // call id -> function name
};

// `tools`: function tools in the flat Responses shape, as chat tools.
absl::Status ReadTools(const Json& tools, std::optional<ParsedTools>& chat_tools_out) {
  if (!tools.is_array()) return WrongType("tools", "an array", tools);
  Json chat_tools = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string field = absl::StrCat("tools[", i, "]");
    const Json& tool = tools[i];
    if (!tool.is_object()) return WrongType(field, "an object", tool);
    const Fields f(tool);
    std::optional<std::string> type, name, description;
    TEXTGEN_RETURN_IF_ERROR(f.String("type", type));
    if (!type) return FieldError("tools", absl::StrCat(field, ".type is missing"));
    if (*type != "function") {
      return FieldError("tools",
                        absl::StrCat(field, ".type \"", type->substr(0, 64), "\" is not supported",
                                     OneOf(*type, kHostedToolTypes)
                                         ? ": it is one of OpenAI's hosted tools, and textgen "
                                           "serves function tools only"
                                         : "; textgen serves function tools only"));
    }
    TEXTGEN_RETURN_IF_ERROR(f.String("name", name));
    if (!name) return FieldError("tools", absl::StrCat(field, ".name is missing"));
    TEXTGEN_RETURN_IF_ERROR(f.String("description", description));
    Json function = {{"name", *name}};
    if (description) function["description"] = *description;
    if (const Json* parameters = f.Find("parameters")) {
      if (!parameters->is_object()) {
        return WrongType(absl::StrCat(field, ".parameters"), "a JSON Schema object", *parameters);
      }
      function["parameters"] = *parameters;
    }
    std::optional<bool> strict;
    TEXTGEN_RETURN_IF_ERROR(f.Bool("strict", strict));
    if (strict) function["strict"] = *strict;
    chat_tools.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  chat_tools_out = ParsedTools::Of(std::move(chat_tools));
  return absl::OkStatus();
}

absl::Status ReadToolChoice(const Json& choice, v1::ToolChoice& out) {
  if (choice.is_string()) {
    if (choice == "auto") {
      out.set_mode(v1::ToolChoice::TOOL_CHOICE_AUTO);
    } else if (choice == "none") {
      out.set_mode(v1::ToolChoice::TOOL_CHOICE_NONE);
    } else if (choice == "required") {
      out.set_mode(v1::ToolChoice::TOOL_CHOICE_REQUIRED);
    } else {
      return FieldError("tool_choice",
                        "tool_choice must be \"auto\", \"none\", \"required\" or "
                        "{\"type\": \"function\", \"name\": \"...\"}");
    }
    return absl::OkStatus();
  }
  if (!choice.is_object()) {
    return WrongType("tool_choice", "a string or an object", choice);
  }
  const Fields f(choice);
  std::optional<std::string> type, name;
  TEXTGEN_RETURN_IF_ERROR(f.String("type", type));
  TEXTGEN_RETURN_IF_ERROR(f.String("name", name));
  if (type != "function" || !name) {
    return FieldError("tool_choice",
                      absl::StrCat("tool_choice as an object must be {\"type\": \"function\", "
                                   "\"name\": \"...\"}",
                                   type ? absl::StrCat(", got type \"", type->substr(0, 64), "\"")
                                        : std::string()));
  }
  out.set_mode(v1::ToolChoice::TOOL_CHOICE_FUNCTION);
  out.set_function_name(*name);
  return absl::OkStatus();
}

// `text.format`: {"type": "text" | "json_object" | "json_schema", ...}.
absl::Status ReadTextFormat(const Json& text, v1::OutputConstraint& out, bool& constrained) {
  if (!text.is_object()) return WrongType("text", "an object", text);
  const Fields f(text);
  const Json* format = f.Find("format");
  if (format == nullptr) return absl::OkStatus();
  if (!format->is_object()) return WrongType("text.format", "an object", *format);
  std::optional<std::string> type;
  TEXTGEN_RETURN_IF_ERROR(Fields(*format).String("type", type));
  if (!type || *type == "text") return absl::OkStatus();
  constrained = true;
  if (*type == "json_object") {
    out.set_json_object(true);
    return absl::OkStatus();
  }
  if (*type != "json_schema") {
    return FieldError("text.format",
                      absl::StrCat("text.format.type \"", type->substr(0, 64),
                                   "\" is not one of \"text\", \"json_object\", \"json_schema\""));
  }
  const Json* schema = Fields(*format).Find("schema");
  if (schema == nullptr) {
    return FieldError("text.format", "text.format.schema is missing (type json_schema)");
  }
  if (!schema->is_object() && !schema->is_boolean()) {
    return WrongType("text.format.schema", "an object", *schema);
  }
  out.set_json_schema(schema->dump());
  return absl::OkStatus();
}

// Options OpenAI has that textgen refuses, each with why; null and the default are fine.
absl::Status RefuseUnsupported(const Fields& f) {
  std::optional<bool> background;
  TEXTGEN_RETURN_IF_ERROR(f.Bool("background", background));
  if (background.value_or(false)) {
    return FieldError("background",
                      "background responses are not supported; stream the response instead");
  }
  std::optional<std::string> truncation;
  TEXTGEN_RETURN_IF_ERROR(f.String("truncation", truncation));
  if (truncation && *truncation != "disabled") {
    return FieldError("truncation",
                      absl::StrCat("truncation \"", truncation->substr(0, 64),
                                   "\" is not supported: textgen never drops input (\"disabled\"); "
                                   "a conversation over the context is refused"));
  }
  for (const char* name : {"prompt", "conversation", "max_tool_calls"}) {
    if (f.Has(name)) {
      return FieldError(name, absl::StrCat(name, " is not supported by textgen's Responses API"));
    }
  }
  if (const Json* include = f.Find("include")) {
    if (!include->is_array()) return WrongType("include", "an array of strings", *include);
    for (size_t i = 0; i < include->size(); ++i) {
      const Json& item = (*include)[i];
      if (!item.is_string()) {
        return WrongType(absl::StrCat("include[", i, "]"), "a string", item);
      }
      // Logprobs are served; reasoning is returned as text already, so its encrypted form
      // (what stateless clients ask for) adds nothing.
      if (item != "message.output_text.logprobs" && item != "reasoning.encrypted_content") {
        return FieldError("include",
                          absl::StrCat("include[", i, "] \"", item.get<std::string>().substr(0, 64),
                                       "\" is not supported (textgen offers "
                                       "\"message.output_text.logprobs\" and "
                                       "\"reasoning.encrypted_content\")"));
      }
    }
  }
  for (const char* name : {"n", "session_id"}) {
    if (f.Has(name)) {
      return FieldError(name, absl::StrCat(name,
                                           " is not a Responses API parameter (use "
                                           "previous_response_id to continue a conversation)"));
    }
  }
  return absl::OkStatus();
}

// max_output_tokens (the chat API's names for it are refused), and the fields the chat API
// shares (sampling extras such as seed and top_k, stop, stream).
absl::Status ReadCommonFields(const Fields& f, OpenAiRequest& request) {
  v1::ChatRequest& chat = request.chat;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (f.Has(name)) {
      return FieldError(name, absl::StrCat(name,
                                           " is not a Responses API parameter; use "
                                           "max_output_tokens"));
    }
  }
  TEXTGEN_RETURN_IF_ERROR(ParseCommonFields(f, request, *chat.mutable_sampling(),
                                            *chat.mutable_stopping(), *chat.mutable_session_id()));
  std::optional<int64_t> max_output_tokens;
  TEXTGEN_RETURN_IF_ERROR(f.Integer("max_output_tokens", max_output_tokens));
  request.max_tokens_field = "max_output_tokens";
  if (max_output_tokens) {
    if (*max_output_tokens < 1 || *max_output_tokens > std::numeric_limits<uint32_t>::max()) {
      return FieldError("max_output_tokens",
                        absl::StrCat("max_output_tokens must be >= 1, got ", *max_output_tokens));
    }
    chat.mutable_stopping()->set_max_new_tokens(static_cast<uint32_t>(*max_output_tokens));
  }
  return absl::OkStatus();
}

// instructions, previous_response_id and store.
absl::Status ReadContinuation(const Fields& f, ResponsesRequest& out) {
  std::optional<std::string> instructions;
  TEXTGEN_RETURN_IF_ERROR(f.String("instructions", instructions));
  out.instructions = std::move(instructions);
  std::optional<std::string> previous;
  TEXTGEN_RETURN_IF_ERROR(f.String("previous_response_id", previous));
  if (previous) {
    if (previous->size() > kMaxResponseIdBytes || !absl::StartsWith(*previous, kResponseIdPrefix)) {
      return FieldError("previous_response_id",
                        absl::StrCat("previous_response_id must be an id this server returned "
                                     "(\"",
                                     kResponseIdPrefix, "...\")"));
    }
    out.previous_response_id = *previous;
  }
  std::optional<bool> store;
  TEXTGEN_RETURN_IF_ERROR(f.Bool("store", store));
  out.store = store.value_or(true);
  return absl::OkStatus();
}

// text.format, or textgen's extras (json_schema, regex, grammar): one constraint.
absl::Status ReadOutputConstraint(const Fields& f, v1::ChatRequest& chat) {
  TEXTGEN_RETURN_IF_ERROR(ParseConstraint(f, *chat.mutable_constraint()));
  const bool extra_constraint = chat.constraint().kind_case() != v1::OutputConstraint::KIND_NOT_SET;
  bool text_constraint = false;
  v1::OutputConstraint from_text;
  if (const Json* text = f.Find("text")) {
    TEXTGEN_RETURN_IF_ERROR(ReadTextFormat(*text, from_text, text_constraint));
  }
  if (text_constraint) {
    if (extra_constraint) {
      return FieldError("text.format",
                        "give one output constraint: text.format, or one of "
                        "response_format, json_schema, regex, grammar");
    }
    *chat.mutable_constraint() = std::move(from_text);
  }
  return absl::OkStatus();
}

// metadata (OpenAI's limits), safety_identifier and service_tier: checked, not used.
absl::Status CheckMetadata(const Fields& f) {
  if (const Json* metadata = f.Find("metadata")) {
    if (!metadata->is_object()) return WrongType("metadata", "an object", *metadata);
    if (metadata->size() > 16) {
      return FieldError("metadata", absl::StrCat("metadata has ", metadata->size(),
                                                 " keys; at most 16 are allowed"));
    }
    for (const auto& [key, value] : metadata->items()) {
      if (key.size() > 64 || !value.is_string() || value.get<std::string>().size() > 512) {
        return FieldError("metadata",
                          "metadata maps keys of at most 64 characters to strings "
                          "of at most 512");
      }
    }
  }
  std::optional<std::string> text;
  for (const char* name : {"safety_identifier", "service_tier"}) {
    TEXTGEN_RETURN_IF_ERROR(f.String(name, text));
  }
  return absl::OkStatus();
}

// What the response object echoes: as sent, with OpenAI's defaults for what was not.
Json ResponseEcho(const Fields& f, bool store) {
  const auto sent = [&](const char* name, Json fallback) {
    const Json* value = f.Find(name);
    return value == nullptr ? fallback : *value;
  };
  Json tools_echo = Json::array();
  if (const Json* tools = f.Find("tools")) tools_echo = *tools;
  Json text_echo = {{"format", {{"type", "text"}}}};
  if (const Json* text_field = f.Find("text"); text_field && text_field->contains("format")) {
    text_echo = *text_field;
  }
  Json reasoning_echo = {{"effort", nullptr}, {"summary", nullptr}};
  if (const Json* reasoning = f.Find("reasoning")) {
    for (const char* key : {"effort", "summary"}) {
      if (reasoning->contains(key)) reasoning_echo[key] = (*reasoning)[key];
    }
  }
  return {{"instructions", sent("instructions", nullptr)},
          {"max_output_tokens", sent("max_output_tokens", nullptr)},
          {"parallel_tool_calls", sent("parallel_tool_calls", true)},
          {"previous_response_id", sent("previous_response_id", nullptr)},
          {"reasoning", std::move(reasoning_echo)},
          {"store", store},
          {"temperature", sent("temperature", 1.0)},
          {"text", std::move(text_echo)},
          {"tool_choice", sent("tool_choice", "auto")},
          {"tools", std::move(tools_echo)},
          {"top_logprobs", sent("top_logprobs", 0)},
          {"top_p", sent("top_p", 1.0)},
          {"truncation", "disabled"},
          {"user", sent("user", nullptr)},
          {"metadata", sent("metadata", Json::object())}};
}

}  // namespace

absl::StatusOr<ResponsesRequest> ParseResponsesRequest(absl::string_view body) {
  absl::StatusOr<Json> parsed = ParseBody(body);
  if (!parsed.ok()) return parsed.status();
  const Fields f(*parsed);
  TEXTGEN_RETURN_IF_ERROR(RefuseUnsupported(f));
  ResponsesRequest out;
  OpenAiRequest& request = out.request;
  request.kind = OpenAiRequest::Kind::kResponses;
  v1::ChatRequest& chat = request.chat;
  TEXTGEN_RETURN_IF_ERROR(ReadCommonFields(f, request));

  const Json* input = f.Find("input");
  if (input == nullptr) return FieldError("input", "input is missing");
  TEXTGEN_RETURN_IF_ERROR(InputReader(chat).Read(*input));
  if (chat.messages().empty()) return FieldError("input", "input holds no items");
  TEXTGEN_RETURN_IF_ERROR(ReadContinuation(f, out));

  if (const Json* tools = f.Find("tools"))
    TEXTGEN_RETURN_IF_ERROR(ReadTools(*tools, request.tools));
  if (const Json* choice = f.Find("tool_choice")) {
    TEXTGEN_RETURN_IF_ERROR(ReadToolChoice(*choice, *chat.mutable_tool_choice()));
  }
  std::optional<bool> parallel_tool_calls;
  TEXTGEN_RETURN_IF_ERROR(f.Bool("parallel_tool_calls", parallel_tool_calls));
  if (parallel_tool_calls) chat.set_parallel_tool_calls(*parallel_tool_calls);
  TEXTGEN_RETURN_IF_ERROR(ReadOutputConstraint(f, chat));

  std::optional<std::string> effort;
  if (const Json* reasoning = f.Find("reasoning")) {
    if (!reasoning->is_object()) return WrongType("reasoning", "an object", *reasoning);
    TEXTGEN_RETURN_IF_ERROR(Fields(*reasoning).String("effort", effort));
  }
  TEXTGEN_RETURN_IF_ERROR(SetTemplateVariables(f, effort, "reasoning.effort", chat));

  std::optional<bool> logprobs_included;
  if (const Json* include = f.Find("include")) {
    for (const Json& item : *include) {
      if (item == "message.output_text.logprobs") logprobs_included = true;
    }
  }
  TEXTGEN_RETURN_IF_ERROR(ParseTopLogprobs(f, *chat.mutable_output()));
  chat.mutable_output()->set_logprobs(logprobs_included.value_or(false));

  TEXTGEN_RETURN_IF_ERROR(CheckMetadata(f));
  out.echo = ResponseEcho(f, out.store);
  return out;
}

std::vector<v1::ChatMessage> AssembleConversation(ResponsesRequest& parsed,
                                                  const std::vector<v1::ChatMessage>& previous) {
  v1::ChatRequest& chat = parsed.request.chat;
  std::vector<v1::ChatMessage> conversation = previous;
  for (v1::ChatMessage& m : *chat.mutable_messages()) conversation.push_back(std::move(m));
  chat.clear_messages();
  if (parsed.instructions.has_value()) {
    v1::ChatMessage* system = chat.add_messages();
    system->set_role("system");
    system->set_content(*parsed.instructions);
  }
  for (const v1::ChatMessage& m : conversation) *chat.add_messages() = m;
  return conversation;
}

}  // namespace textgen::server::http
