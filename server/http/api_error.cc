#include "server/http/api_error.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/core/validation.h"

namespace textgen::server::http {
namespace {

using Json = nlohmann::ordered_json;

const char* TypeForHttpStatus(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 429:
      return "rate_limit_error";
    default:
      return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

ApiError ApiErrorForHttpStatus(int http_status, absl::string_view message) {
  ApiError error;
  error.http_status = http_status;
  error.type = TypeForHttpStatus(http_status);
  error.message = std::string(message);
  return error;
}

ApiError ApiErrorFromStatus(const absl::Status& status) {
  int http_status = 500;
  std::string code;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      http_status = 400;
      break;
    case absl::StatusCode::kOutOfRange:
      http_status = 400;
      code = "context_length_exceeded";
      break;
    case absl::StatusCode::kUnauthenticated:
      http_status = 401;
      break;
    case absl::StatusCode::kPermissionDenied:
      http_status = 403;
      break;
    case absl::StatusCode::kNotFound:
      http_status = 404;
      break;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      http_status = 409;
      break;
    case absl::StatusCode::kResourceExhausted:
      http_status = 429;
      break;
    case absl::StatusCode::kCancelled:
      http_status = 499;
      break;
    case absl::StatusCode::kUnimplemented:
      http_status = 501;
      break;
    case absl::StatusCode::kUnavailable:
      http_status = 503;
      break;
    case absl::StatusCode::kDeadlineExceeded:
      http_status = 504;
      break;
    default:
      http_status = 500;
  }
  ApiError error = ApiErrorForHttpStatus(http_status, status.message());
  error.code = std::move(code);
  if (auto param = status.GetPayload(kParamPayload)) {
    error.param = std::string(*param);
  }
  if (status.code() == absl::StatusCode::kNotFound && ErrorField(status) == "model") {
    error.code = "model_not_found";  // core/model_name.h's refusal
    error.param = "model";
  }
  if (error.message.empty()) error.message = absl::StatusCodeToString(status.code());
  return error;
}

HttpResponse ApiErrorResponse(const absl::Status& status, int http_status) {
  ApiError error = ApiErrorFromStatus(status);
  if (http_status != 0 && error.http_status != http_status) {
    ApiError renamed = ApiErrorForHttpStatus(http_status, error.message);
    renamed.param = std::move(error.param);
    renamed.code = std::move(error.code);
    error = std::move(renamed);
  }
  return HttpResponse::Json(error.http_status, ApiErrorJson(error));
}

std::string ApiErrorJson(const ApiError& error) {
  const Json body = {{"error",
                      {{"message", error.message},
                       {"type", error.type},
                       {"param", error.param.empty() ? Json(nullptr) : Json(error.param)},
                       {"code", error.code.empty() ? Json(nullptr) : Json(error.code)}}}};
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace textgen::server::http
