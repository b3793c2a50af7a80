#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/http/json_fields.h"
#include "server/http/openai/openai_request.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server::http {

// The ids the Responses API hands out and takes back ("resp_" + 32 hex digits).
inline constexpr absl::string_view kResponseIdPrefix = "resp_";
inline constexpr size_t kMaxResponseIdBytes = 64;

// POST /v1/responses mapped onto a chat request (docs/api.md, "Responses"):
//   - `input` (a string, or items: messages, function_call, function_call_output, reasoning)
//     becomes chat messages; consecutive function_call items are one assistant message with
//     tool_calls, a reasoning item is the next assistant message's reasoning_content;
//   - `instructions` is a system message before everything (not carried over by
//     previous_response_id, as OpenAI documents);
//   - function `tools` and `tool_choice` become chat tools; `text.format` the output
//     constraint; `reasoning.effort` the template's thinking switch;
//   - max_output_tokens, temperature, top_p, top_logprobs as OpenAI has them, plus the chat
//     API's textgen extras (seed, top_k, min_p, stop, ...).
// Only the JSON shape is checked here; the chat request then goes through the shared
// validation. INVALID_ARGUMENT (with kParamPayload) for a malformed field and for what
// textgen does not offer (built-in tools such as web_search, image or file inputs, background
// mode, truncation "auto"), naming it.
struct ResponsesRequest {
  OpenAiRequest request;  // kind kResponses; chat.messages holds only `input`
  std::optional<std::string> instructions;
  std::string previous_response_id;  // empty: none
  bool store = true;
  // The request's parameters as the response object echoes them (instructions, tools,
  // tool_choice, text, reasoning, temperature, top_p, max_output_tokens, metadata, ...).
  Json echo;
};

absl::StatusOr<ResponsesRequest> ParseResponsesRequest(absl::string_view body);

// Makes parsed.request.chat's messages the conversation the model sees: `instructions` as a
// system message, the previous response's conversation, then the new input. Returns the
// conversation without the instructions: what a later response continues from.
std::vector<v1::ChatMessage> AssembleConversation(ResponsesRequest& parsed,
                                                  const std::vector<v1::ChatMessage>& previous);

}  // namespace textgen::server::http
