#include "server/http/tokenize_route.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "server/core/tokenize.h"
#include "server/http/openai_response.h"

namespace textgen::server::http {
namespace {

// Parses `body` into `in`, runs `work`, and writes `out` as JSON; an error response otherwise.
template <typename In, typename Out, typename Work>
HttpResponse Serve(const std::string& body, Work work) {
  In in;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = false;
  if (auto parsed = google::protobuf::util::JsonStringToMessage(body, &in, parse); !parsed.ok()) {
    const ApiError error = ApiErrorFromStatus(absl::InvalidArgumentError(
        absl::StrCat("the body is not a valid request: ", std::string(parsed.message()))));
    return HttpResponse::Json(error.http_status, ApiErrorJson(error));
  }
  Out out;
  if (absl::Status status = work(in, out); !status.ok()) {
    const ApiError error = ApiErrorFromStatus(status);
    return HttpResponse::Json(error.http_status, ApiErrorJson(error));
  }
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  print.always_print_primitive_fields = true;  // an empty "ids": [] rather than nothing
  std::string json;
  if (auto printed = google::protobuf::util::MessageToJsonString(out, &json, print);
      !printed.ok()) {
    const ApiError error = ApiErrorFromStatus(absl::InternalError(std::string(printed.message())));
    return HttpResponse::Json(error.http_status, ApiErrorJson(error));
  }
  return HttpResponse::Json(200, std::move(json));
}

HttpResponse Respond(const std::string& body, const ServiceBackend& backend, bool detokenize) {
  const model::Tokenizer& tokenizer = *backend.tokenizer;
  if (detokenize) {
    return Serve<v1::DetokenizeRequest, v1::DetokenizeResponse>(
        body, [&](const v1::DetokenizeRequest& in, v1::DetokenizeResponse& out) {
          return Detokenize(tokenizer, in, out);
        });
  }
  return Serve<v1::TokenizeRequest, v1::TokenizeResponse>(
      body, [&](const v1::TokenizeRequest& in, v1::TokenizeResponse& out) {
        return Tokenize(tokenizer, backend.validation.add_bos, in, out);
      });
}

}  // namespace

void ServeTokenizeRoute(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange,
                        const ServiceBackend& backend, bool detokenize) {
  if (backend.preparation == nullptr) {
    return exchange->Respond(Respond(request.body, backend, detokenize));
  }
  // The exchange's Post runs the answer on its executor, as every exchange call must.
  absl::Status posted =
      backend.preparation->Post([exchange, body = request.body, &backend, detokenize]() mutable {
        auto response = std::make_shared<HttpResponse>(Respond(body, backend, detokenize));
        exchange->Post([exchange, response] { exchange->Respond(std::move(*response)); });
      });
  if (!posted.ok()) {
    const ApiError error = ApiErrorFromStatus(posted);
    exchange->Respond(HttpResponse::Json(error.http_status, ApiErrorJson(error)));
  }
}

}  // namespace textgen::server::http
