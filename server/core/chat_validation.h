#pragma once

#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer.h"
#include "server/core/chat_templates.h"
#include "server/core/validation.h"
#include "server/scheduler/validated_request.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server {

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
absl::StatusOr<ValidatedRequest> ValidateChatRequest(const v1::ChatRequest& request,
                                                     const ChatTemplates& templates,
                                                     const model::Tokenizer& tokenizer,
                                                     const ValidationOptions& options,
                                                     const RequestContext& context);

}  // namespace textgen::server
