#pragma once

#include <initializer_list>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/core/tool_plan.h"
#include "server/http/api_error.h"
#include "server/http/json_fields.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server::http {

// Most choices (`n`) one request may ask for: each is a sequence of its own in the batch.
inline constexpr int kMaxChoices = 16;

// An OpenAI request mapped onto textgen's own request messages, which then go through the same
// validation as gRPC's: only the JSON shape is checked here.
struct OpenAiRequest {
  enum class Kind { kChat, kCompletion, kResponses, kEmbeddings };
  Kind kind = Kind::kChat;
  std::string model;  // as sent; empty when absent
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int choices = 1;             // candidates generated: n, or completions' best_of
  int returned_choices = 0;    // completions' n when best_of > n (the best returned); 0: all
  // What the client called the length limit and the alternatives count, for error messages.
  std::string max_tokens_field = "max_tokens";
  v1::ChatRequest chat;              // kind == kChat or kResponses
  std::optional<ParsedTools> tools;  // chat's `tools`, parsed once (chat.tools_json stays empty)
  v1::GenerateRequest completion;    // kind == kCompletion
};

// POST /v1/chat/completions. INVALID_ARGUMENT (with kParamPayload) for malformed JSON, a
// field of the wrong type or shape, or an option textgen does not offer (image parts, n past
// kMaxChoices or with a session).
absl::StatusOr<OpenAiRequest> ParseChatCompletionRequest(absl::string_view body);

// POST /v1/completions, as above (one prompt: a string or token ids).
absl::StatusOr<OpenAiRequest> ParseCompletionRequest(absl::string_view body);

// Shared by the request shapes that generate (chat, completions, responses).
// The fields every generating request may carry: OpenAI's sampling and stopping options
// (temperature, top_p, seed, stop, max_tokens, ...), `n`, `stream`, and textgen's extras.
absl::Status ParseCommonFields(const Fields& f, OpenAiRequest& out,
                               v1::SamplingParameters& sampling, v1::StoppingCriteria& stopping,
                               std::string& session_id);
// A message's content: a string, or an array of parts of `text_types` (or, with `refusals`,
// "refusal" parts) whose text is joined with newlines, as vLLM does. Other parts (images,
// audio, files) are refused naming the part: every model textgen serves reads text only.
// null is "".
absl::StatusOr<std::string> TextParts(const Json& content, const std::string& field,
                                      std::initializer_list<absl::string_view> text_types,
                                      bool refusals = false);
// `top_logprobs` (chat, responses) into `output`.
absl::Status ParseTopLogprobs(const Fields& f, v1::OutputOptions& output);
// response_format and textgen's extras json_schema, regex and grammar: at most one.
absl::Status ParseConstraint(const Fields& f, v1::OutputConstraint& out);
// The template's variables: `chat_template_kwargs`, and a reasoning effort (sent as
// `effort_param`) mapped onto the templates' thinking switch: "none" and "minimal" turn
// thinking off, the others leave it on; chat_template_kwargs.enable_thinking wins.
absl::Status SetTemplateVariables(const Fields& f, const std::optional<std::string>& effort,
                                  absl::string_view effort_param, v1::ChatRequest& chat);

}  // namespace textgen::server::http
