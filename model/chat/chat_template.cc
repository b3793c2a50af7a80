#include "model/chat/chat_template.h"

#include "absl/strings/str_cat.h"
#include "model/chat/json_value.h"

namespace textgen::model {
namespace {

using jinja::Value;

// Variables the request sets through dedicated fields, so `variables_json` may not.
constexpr absl::string_view kReservedVariables[] = {"messages", "add_generation_prompt", "tools",
                                                    "bos_token", "eos_token"};

// `calls_format` set: the calls are written into the content in that format (for templates
// that do not render tool_calls).
// `object_arguments`: the template iterates a call's arguments as a mapping.
absl::StatusOr<Value> MessageValue(const ChatMessage& message, size_t index,
                                   std::optional<ToolCallFormat> calls_format,
                                   bool object_arguments) {
  jinja::Dict dict;
  // Everything from the request is tainted, roles included.
  dict.Set(Value::String("role"), Value::Tainted(message.role));
  dict.Set(Value::String("content"), Value::Tainted(message.content));
  if (!message.reasoning_content.empty()) {
    dict.Set(Value::String("reasoning_content"), Value::Tainted(message.reasoning_content));
  }
  if (!message.name.empty()) dict.Set(Value::String("name"), Value::Tainted(message.name));
  if (!message.tool_call_id.empty()) {
    dict.Set(Value::String("tool_call_id"), Value::Tainted(message.tool_call_id));
  }
  if (!message.tool_calls_json.empty()) {
    absl::StatusOr<Value> calls = ParseJsonValue(message.tool_calls_json, /*tainted=*/true,
                                                 absl::StrCat("messages[", index, "].tool_calls"));
    if (!calls.ok()) return calls.status();
    if (!calls->is_list()) {
      return absl::InvalidArgumentError(
          absl::StrCat("messages[", index, "].tool_calls must be a JSON array"));
    }
    if (calls_format.has_value()) {
      absl::StatusOr<jinja::TaintedString> content =
          ContentWithCalls(message.content, *calls, *calls_format);
      if (!content.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("messages[", index, "].", content.status().message()));
      }
      dict.Set(Value::String("content"), Value::String(*std::move(content)));
    }
    dict.Set(Value::String("tool_calls"),
             object_arguments ? WithObjectArguments(*calls) : *std::move(calls));
  }
  return Value::MakeDict(std::move(dict));
}

}  // namespace

absl::StatusOr<ChatTemplate> ChatTemplate::Create(absl::string_view source, std::string bos_token,
                                                  std::string eos_token) {
  if (source.size() > kMaxChatTemplateBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the chat template is ", source.size(),
                                                   " bytes; at most ", kMaxChatTemplateBytes,
                                                   " are allowed"));
  }
  absl::StatusOr<jinja::Template> parsed = jinja::Template::Parse(source);
  if (!parsed.ok()) return parsed.status();
  return ChatTemplate(*std::move(parsed),
                      DetectTemplateToolSupport(std::string_view(source.data(), source.size())),
                      std::move(bos_token), std::move(eos_token));
}

absl::StatusOr<jinja::List> ChatTemplate::MessagesValue(const ChatInput& input) const {
  const bool polyfill = input.tool_call_format.has_value();
  std::optional<ToolCallFormat> calls_format;
  if (polyfill && !tool_support_.reads_tool_calls) calls_format = input.tool_call_format;
  jinja::List messages;
  for (size_t i = 0; i < input.messages.size(); ++i) {
    absl::StatusOr<Value> message =
        MessageValue(input.messages[i], i, calls_format, tool_support_.reads_object_arguments);
    if (!message.ok()) return message.status();
    messages.push_back(*std::move(message));
  }
  if (polyfill && tool_support_.tools_in_system_message && input.tools.has_value()) {
    absl::StatusOr<std::string> tools = ToolsAsSystemText(*input.tools);
    if (!tools.ok()) return tools.status();
    const Value* role = messages.empty() ? nullptr : messages.front().dict().Find("role");
    if (role == nullptr || role->str() != "system") {
      jinja::Dict system;
      system.Set(Value::String("role"), Value::String("system"));
      system.Set(Value::String("content"), Value::String(kToolsSystemPrompt));
      messages.insert(messages.begin(), Value::MakeDict(std::move(system)));
    }
    messages.front().mutable_dict().Set(Value::String("tools"), Value::Tainted(*std::move(tools)));
  }
  return messages;
}

absl::StatusOr<ChatPrompt> ChatTemplate::Render(const ChatInput& input,
                                                const jinja::RenderOptions& options) const {
  jinja::Dict context;
  if (!input.variables_json.empty()) {
    absl::StatusOr<Value> variables =
        ParseJsonValue(input.variables_json, /*tainted=*/true, "template_variables");
    if (!variables.ok()) return variables.status();
    if (!variables->is_dict()) {
      return absl::InvalidArgumentError("template_variables must be a JSON object");
    }
    for (const auto& [key, value] : variables->dict().entries()) {
      for (absl::string_view reserved : kReservedVariables) {
        if (key.str() == reserved) {
          return absl::InvalidArgumentError(absl::StrCat(
              "template_variables may not set '", reserved, "'; it has its own request field"));
        }
      }
      context.Set(Value::String(key.str()), value);
    }
  }
  absl::StatusOr<jinja::List> messages = MessagesValue(input);
  if (!messages.ok()) return messages.status();
  context.Set(Value::String("messages"), Value::MakeList(*std::move(messages)));
  context.Set(Value::String("add_generation_prompt"), Value::Bool(input.add_generation_prompt));
  context.Set(Value::String("bos_token"), Value::String(bos_token_));
  context.Set(Value::String("eos_token"), Value::String(eos_token_));
  if (input.tools.has_value()) {
    if (!input.tools->is_list()) return absl::InvalidArgumentError("tools must be a JSON array");
    context.Set(Value::String("tools"), *input.tools);
  }
  absl::StatusOr<jinja::TaintedString> rendered = template_.Render(context, options);
  if (!rendered.ok()) return rendered.status();
  ChatPrompt prompt;
  prompt.text = std::move(rendered->bytes);
  for (const jinja::TaintRange& range : rendered->taint) {
    prompt.untrusted.push_back({range.begin, range.end});
  }
  return prompt;
}

}  // namespace textgen::model
