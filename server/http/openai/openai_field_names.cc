#include "server/http/openai/openai_field_names.h"

#include <optional>
#include <string>

#include "server/http/field_names.h"

namespace textgen::server::http {
namespace {

// A request field by its proto path (indices stripped) and its OpenAI names. `param` is the
// parameter the client sent (error.param); `name` is how the message spells the field. They
// differ for chat, where a problem with the rendered prompt is named "prompt" but the client
// sent "messages".
struct OpenAiName {
  const char* path;
  const char* completion_name;
  const char* chat_name;
  const char* chat_param;      // nullptr: chat_name
  const char* responses_name;  // the Responses API's name (and param); nullptr: chat's
};

// "max_tokens" stands for the spelling the request used (max_tokens or max_completion_tokens).
constexpr OpenAiName kNames[] = {
    {"sampling.temperature", "temperature", "temperature", nullptr, nullptr},
    {"sampling.top_k", "top_k", "top_k", nullptr, nullptr},
    {"sampling.top_p", "top_p", "top_p", nullptr, nullptr},
    {"sampling.min_p", "min_p", "min_p", nullptr, nullptr},
    {"sampling.repetition_penalty", "repetition_penalty", "repetition_penalty", nullptr, nullptr},
    {"sampling.presence_penalty", "presence_penalty", "presence_penalty", nullptr, nullptr},
    {"sampling.frequency_penalty", "frequency_penalty", "frequency_penalty", nullptr, nullptr},
    {"sampling.logit_bias", "logit_bias", "logit_bias", nullptr, nullptr},
    {"stopping.stop", "stop", "stop", nullptr, nullptr},
    {"stopping.stop_token_ids", "stop_token_ids", "stop_token_ids", nullptr, nullptr},
    {"stopping.max_new_tokens", "max_tokens", "max_tokens", nullptr, nullptr},
    {"stopping.min_new_tokens", "min_tokens", "min_tokens", nullptr, nullptr},
    {"output.top_logprobs", "logprobs", "top_logprobs", nullptr, nullptr},
    {"prompt", "prompt", "prompt", "messages", "input"},
    {"text", "prompt", "prompt", "messages", "input"},
    {"tokens.ids", "prompt", "prompt", "messages", "input"},
    {"messages", "messages", "messages", nullptr, "input"},
    {"constraint.json_schema", "response_format", "response_format", nullptr, "text.format"},
    {"constraint.json_object", "response_format", "response_format", nullptr, "text.format"},
    {"constraint.regex", "regex", "regex", nullptr, nullptr},
    {"constraint.grammar", "grammar", "grammar", nullptr, nullptr},
    {"session_id", "session_id", "session_id", nullptr, nullptr},
    {"inputs", "input", "input", nullptr, "input"},  // embeddings
    {"dimensions", "dimensions", "dimensions", nullptr, nullptr},
    {"request_id", "request_id", "request_id", nullptr, nullptr},
    {"template_name", "template_name", "template_name", nullptr, nullptr},
    {"tools", "tools", "tools", nullptr, nullptr},
    {"tool_choice", "tool_choice", "tool_choice", nullptr, nullptr},
    {"tool_choice.function.name", "tool_choice.function.name", "tool_choice.function.name", nullptr,
     "tool_choice.name"},
};

// The table's entry for a field's path (without indices), or null.
const OpenAiName* Find(absl::string_view path) {
  for (const OpenAiName& name : kNames) {
    if (path == name.path) return &name;
  }
  return nullptr;
}

}  // namespace

absl::Status ToOpenAiFieldNames(const absl::Status& status, const OpenAiRequest& request) {
  return RenameErrorField(status, [&](absl::string_view path) -> std::optional<FieldSpelling> {
    const OpenAiName* entry = Find(path);
    if (entry == nullptr) return std::nullopt;
    const auto spelled = [&](const char* name) -> std::string {
      return std::string(name) == "max_tokens" ? request.max_tokens_field : std::string(name);
    };
    switch (request.kind) {
      case OpenAiRequest::Kind::kCompletion:
      case OpenAiRequest::Kind::kEmbeddings: {
        const std::string name = spelled(entry->completion_name);
        return FieldSpelling{name, name};
      }
      case OpenAiRequest::Kind::kChat: {
        const std::string name = spelled(entry->chat_name);
        return FieldSpelling{name, entry->chat_param != nullptr ? entry->chat_param : name};
      }
      case OpenAiRequest::Kind::kResponses: {
        const std::string name = entry->responses_name != nullptr
                                     ? std::string(entry->responses_name)
                                     : spelled(entry->chat_name);
        return FieldSpelling{name, name};
      }
    }
    return std::nullopt;
  });
}

}  // namespace textgen::server::http
