#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/chat/chat_template.h"
#include "model/chat/tool_call_format.h"
#include "model/tokenizer/tokenizer.h"
#include "server/core/validation.h"
#include "server/scheduler/validated_request.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server {

struct ParsedTools;  // tool_plan.h

// The chat templates Chat requests are rendered with, by name ("" = the default).
class ChatTemplates {
 public:
  ChatTemplates() = default;

  // From the model file's templates (`from_model`, name -> source) and an optional
  // --chat-template file that replaces the default. A bad --chat-template file is an error
  // (the operator asked for it); a model template that does not parse is kept as unusable, so
  // the model still serves Generate and Chat explains what is wrong.
  // Each template's reply format is read off its markers, unless `tool_call_format` (the
  // --tool-call-format flag) names one for all.
  static absl::StatusOr<ChatTemplates> Load(
      const std::map<std::string, std::string>& from_model, const std::string& template_file,
      const model::Tokenizer& tokenizer,
      std::optional<model::ToolCallFormat> tool_call_format = std::nullopt);

  // The template called `name`: FAILED_PRECONDITION when the model has none or it did not
  // parse (naming --chat-template), INVALID_ARGUMENT when there is no such named variant.
  absl::StatusOr<const model::ChatTemplate*> Find(const std::string& name) const;

  // How replies of the template `name` (one Find returned) are read.
  const model::ReplyFormat& reply_format(const std::string& name) const;

  // Usable template names, "" first (ModelInfo.chat_templates).
  std::vector<std::string> names() const;
  // "gguf" or the --chat-template path; empty without a default template.
  const std::string& default_source() const { return default_source_; }

 private:
  std::map<std::string, model::ChatTemplate> templates_;
  std::map<std::string, model::ReplyFormat> formats_;
  std::map<std::string, absl::Status> unusable_;  // name -> why it did not parse
  std::string default_source_;
};

// Request limits of Chat (besides Generate's).
inline constexpr int kMaxChatMessages = 4096;
inline constexpr int kMaxChatRoleBytes = 64;
inline constexpr int kMaxTemplateNameBytes = 128;

// Turns a ChatRequest into a ValidatedRequest: checks the fields Generate has, renders the
// messages with the chosen template and tokenizes the result. Control tokens the template
// writes become their ids; message contents (and every other request string) stay text.
// BOS is not added: templates write it themselves (as Hugging Face tokenizes chat prompts).
// prompt_text is the rendered prompt (for echo). Errors: those of ValidateGenerateRequest,
// FAILED_PRECONDITION without a usable template, INVALID_ARGUMENT for bad messages or what
// the template refuses (its own message), RESOURCE_EXHAUSTED for a render limit.
// `parsed_tools`: the tools as the front end parsed them, in place of `request.tools_json()`.
absl::StatusOr<ValidatedRequest> ValidateChatRequest(const v1::ChatRequest& request,
                                                     const ChatTemplates& templates,
                                                     const model::Tokenizer& tokenizer,
                                                     const ValidationOptions& options,
                                                     const RequestContext& context,
                                                     const ParsedTools* parsed_tools = nullptr);

}  // namespace textgen::server
