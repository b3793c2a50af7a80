#include "server/http/textgen_routes.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "server/core/admission.h"
#include "server/core/tokenize.h"
#include "server/http/api_error.h"

namespace textgen::server::http {
namespace {

// Parses `body` into `in`, runs `work`, and writes `out` as JSON; an error response otherwise.
template <typename In, typename Out, typename Work>
HttpResponse Serve(const std::string& body, Work work) {
  In in;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = false;
  if (auto parsed = google::protobuf::util::JsonStringToMessage(body, &in, parse); !parsed.ok()) {
    return ApiErrorResponse(absl::InvalidArgumentError(
        absl::StrCat("the body is not a valid request: ", std::string(parsed.message()))));
  }
  Out out;
  if (absl::Status status = work(in, out); !status.ok()) {
    return ApiErrorResponse(status);
  }
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  print.always_print_primitive_fields = true;  // an empty "ids": [] rather than nothing
  std::string json;
  if (auto printed = google::protobuf::util::MessageToJsonString(out, &json, print);
      !printed.ok()) {
    return ApiErrorResponse(absl::InternalError(std::string(printed.message())));
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

void Health(const RouteCall& call) {
  const char* state = call.backend == nullptr ? "loading" : call.draining ? "draining" : "ok";
  const nlohmann::json body = {{"status", state}};
  call.exchange->Respond(
      HttpResponse::Json(absl::string_view(state) == "ok" ? 200 : 503, body.dump()));
}

void ServeTokenizer(const RouteCall& call, bool detokenize) {
  const ServiceBackend* backend = call.backend;
  std::shared_ptr<HttpExchange> exchange = call.exchange;
  // The exchange's Post runs the answer on its executor, as every exchange call must.
  AdmitForPreparation(
      backend->preparation,
      [exchange, body = call.request.body, backend, detokenize] {
        auto response = std::make_shared<HttpResponse>(Respond(body, *backend, detokenize));
        exchange->Post([exchange, response] { exchange->Respond(std::move(*response)); });
      },
      [exchange](const absl::Status& refused) { exchange->Respond(ApiErrorResponse(refused)); });
}

}  // namespace

ApiFamily TextgenRoutes() {
  return ApiFamily{.errors = &WriteApiError,
                   .routes = {
                       {.method = "POST",
                        .path = "/tokenize",
                        .handler = [](const RouteCall& call) { ServeTokenizer(call, false); }},
                       {.method = "POST",
                        .path = "/detokenize",
                        .handler = [](const RouteCall& call) { ServeTokenizer(call, true); }},
                       {.method = "GET", .path = "/health", .open = true, .handler = &Health},
                   }};
}

}  // namespace textgen::server::http
