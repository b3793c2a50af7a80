#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/chat/jinja/template.h"
#include "model/chat/tool_call_format.h"
#include "model/chat/tool_polyfill.h"
#include "model/tokenizer/text_range.h"

namespace textgen::model {

// Largest chat template accepted (real ones are a few KiB to ~30 KiB).
inline constexpr size_t kMaxChatTemplateBytes = 1 << 20;

struct ChatMessage {
  std::string role;
  std::string content;
  // Fields some templates read; empty = not passed to the template.
  std::string reasoning_content;
  std::string name;
  std::string tool_call_id;
  std::string tool_calls_json;  // a JSON array, as OpenAI's tool_calls
};

struct ChatInput {
  std::vector<ChatMessage> messages;
  bool add_generation_prompt = true;
  // Passed as `tools` (a list: ParseJsonValue or JsonToValue of the request's tools, tainted);
  // unset = undefined.
  std::optional<jinja::Value> tools;
  std::string variables_json;  // a JSON object of extra variables ({"enable_thinking": false})
  // How the model writes calls. Set: a template that does not render tools or calls the
  // usual way gets them where it looks (see tool_polyfill.h); unset: rendered as written.
  std::optional<ToolCallFormat> tool_call_format;
};

// A rendered conversation: the prompt text and the bytes of it that came from the request
// (message contents, roles, tool arguments), which must never be read as control tokens.
struct ChatPrompt {
  std::string text;
  std::vector<TextRange> untrusted;
};

// A model's chat template: renders a conversation into the prompt text the model was trained
// on, the way Hugging Face does (see jinja::Template). Immutable; thread-safe.
class ChatTemplate {
 public:
  // Parses `source`; `bos_token` / `eos_token` are the texts of the vocabulary's BOS and EOS
  // tokens (the templates' bos_token / eos_token variables). Syntax errors name line and
  // column.
  static absl::StatusOr<ChatTemplate> Create(absl::string_view source, std::string bos_token,
                                             std::string eos_token);

  // INVALID_ARGUMENT for bad JSON in the input, a reserved variable name, or a template error
  // (raise_exception's own message is kept whole); RESOURCE_EXHAUSTED when a render limit
  // is hit.
  absl::StatusOr<ChatPrompt> Render(const ChatInput& input,
                                    const jinja::RenderOptions& options = {}) const;

 private:
  ChatTemplate(jinja::Template parsed, TemplateToolSupport tool_support, std::string bos_token,
               std::string eos_token)
      : template_(std::move(parsed)),
        tool_support_(tool_support),
        bos_token_(std::move(bos_token)),
        eos_token_(std::move(eos_token)) {}

  absl::StatusOr<jinja::List> MessagesValue(const ChatInput& input) const;

  jinja::Template template_;
  TemplateToolSupport tool_support_;
  std::string bos_token_;
  std::string eos_token_;
};

}  // namespace textgen::model
