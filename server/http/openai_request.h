#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server::http {

// Deepest JSON nesting a request body may have (a chat request needs about 6; tool schemas a
// few more). Checked on the raw bytes before parsing.
inline constexpr int kMaxRequestJsonDepth = 64;

// Most choices (`n`) one request may ask for: each is a sequence of its own in the batch.
inline constexpr int kMaxChoices = 16;

// Status payload naming the request field an INVALID_ARGUMENT is about (OpenAI's error.param).
inline constexpr absl::string_view kOpenAiParamPayload = "textgen.openai/param";

// An OpenAI request mapped onto textgen's own request messages, which then go through the same
// validation as gRPC's: only the JSON shape is checked here.
struct OpenAiRequest {
  enum class Kind { kChat, kCompletion };
  Kind kind = Kind::kChat;
  std::string model;  // as sent; empty when absent
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int choices = 1;             // n (completions: and best_of, which must equal it)
  // What the client called the length limit and the alternatives count, for error messages.
  std::string max_tokens_field = "max_tokens";
  v1::ChatRequest chat;            // kind == kChat
  v1::GenerateRequest completion;  // kind == kCompletion
};

// POST /v1/chat/completions. INVALID_ARGUMENT (with kOpenAiParamPayload) for malformed JSON, a
// field of the wrong type or shape, or an option textgen does not offer (image parts, n past
// kMaxChoices or with a session).
absl::StatusOr<OpenAiRequest> ParseChatCompletionRequest(absl::string_view body);

// POST /v1/completions, as above (one prompt: a string or token ids).
absl::StatusOr<OpenAiRequest> ParseCompletionRequest(absl::string_view body);

}  // namespace textgen::server::http
