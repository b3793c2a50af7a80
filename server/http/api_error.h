#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace textgen::server::http {

// Status payload naming the request field an INVALID_ARGUMENT is about (OpenAI's error.param).
inline constexpr absl::string_view kOpenAiParamPayload = "textgen.openai/param";

// An error as OpenAI clients expect it: an HTTP status and
// {"error": {"message", "type", "param", "code"}}.
struct ApiError {
  int http_status = 500;
  std::string type;     // "invalid_request_error", "rate_limit_error", ...
  std::string message;  // what a person can act on
  std::string param;    // the request field, or empty
  std::string code;     // "model_not_found", "context_length_exceeded", or empty
};

// The one mapping from textgen's status codes to HTTP: INVALID_ARGUMENT and OUT_OF_RANGE 400,
// UNAUTHENTICATED 401, PERMISSION_DENIED 403, NOT_FOUND 404, FAILED_PRECONDITION 409 (a busy
// session), RESOURCE_EXHAUSTED 429, CANCELLED 499, UNAVAILABLE 503, DEADLINE_EXCEEDED 504,
// anything else 500. `param` comes from the status's kOpenAiParamPayload.
ApiError ApiErrorFromStatus(const absl::Status& status);
// An error the HTTP layer finds itself (413 body too large, 404 unknown route, ...).
ApiError ApiErrorForHttpStatus(int http_status, absl::string_view message);
std::string ApiErrorJson(const ApiError& error);

}  // namespace textgen::server::http
