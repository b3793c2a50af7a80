#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/transport/http_server.h"

namespace textgen::server::http {

// Status payload naming the request parameter an error is about, as the client spelled it
// (error.param in the OpenAI body; each API family writes it its own way).
inline constexpr absl::string_view kParamPayload = "textgen.http/param";

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
// anything else 500. `param` comes from the status's kParamPayload; NOT_FOUND about the
// field "model" (CheckModelName) is code "model_not_found".
ApiError ApiErrorFromStatus(const absl::Status& status);
// An error the HTTP layer finds itself (413 body too large, 404 unknown route, ...).
ApiError ApiErrorForHttpStatus(int http_status, absl::string_view message);
std::string ApiErrorJson(const ApiError& error);
// The whole error response for `status`: with the HTTP status ApiErrorFromStatus maps it to,
// or with `http_status` when not 0 (the router's refusals: 405 for a method a route does not
// take). textgen's own routes and the OpenAI family write errors this way.
HttpResponse ApiErrorResponse(const absl::Status& status, int http_status = 0);
// The same as a family's error writer (router.h's ErrorWriter).
inline HttpResponse WriteApiError(int http_status, const absl::Status& status) {
  return ApiErrorResponse(status, http_status);
}

}  // namespace textgen::server::http
