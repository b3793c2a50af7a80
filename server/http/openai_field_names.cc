#include "server/http/openai_field_names.h"

#include <optional>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/core/validation.h"

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

// The table's entry for `field`: its path up to the first '[' or a "messages[..." prefix.
const OpenAiName* Find(absl::string_view field) {
  const absl::string_view base = field.substr(0, field.find('['));
  for (const OpenAiName& name : kNames) {
    if (base == name.path) return &name;
  }
  return nullptr;
}

}  // namespace

absl::Status ToOpenAiFieldNames(const absl::Status& status, const OpenAiRequest& request) {
  const std::optional<std::string> field = ErrorField(status);
  if (!field.has_value()) return status;
  const OpenAiName* entry = Find(*field);
  if (entry == nullptr) return status;
  const auto spelled = [&](const char* name) -> std::string {
    return std::string(name) == "max_tokens" ? request.max_tokens_field : std::string(name);
  };
  std::string name, param;
  switch (request.kind) {
    case OpenAiRequest::Kind::kCompletion:
    case OpenAiRequest::Kind::kEmbeddings:
      name = param = spelled(entry->completion_name);
      break;
    case OpenAiRequest::Kind::kChat:
      name = spelled(entry->chat_name);
      param = entry->chat_param != nullptr ? std::string(entry->chat_param) : name;
      break;
    case OpenAiRequest::Kind::kResponses:
      name = param = entry->responses_name != nullptr ? std::string(entry->responses_name)
                                                      : spelled(entry->chat_name);
      break;
  }
  // Only the leading name is the field's: "stopping.stop[1] is empty" -> "stop[1] is empty".
  const absl::string_view path = absl::string_view(*field).substr(0, field->find('['));
  std::string message(status.message());
  if (absl::StartsWith(message, path)) message = absl::StrCat(name, message.substr(path.size()));
  absl::Status out(status.code(), message);
  out.SetPayload(kOpenAiParamPayload, absl::Cord(param));
  return out;
}

}  // namespace textgen::server::http
