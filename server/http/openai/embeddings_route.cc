#include "server/http/openai/embeddings_route.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "model/base/status_macros.h"
#include "server/core/admission.h"
#include "server/core/embedding.h"
#include "server/core/model_name.h"
#include "server/http/api_error.h"
#include "server/http/json_fields.h"
#include "server/http/openai/openai_field_names.h"
#include "server/observability/request_report.h"

namespace textgen::server::http {
namespace {

// One request on its way: parsed and validated on the preparation pool, submitted and
// answered on the exchange's executor.
struct EmbeddingCall {
  std::shared_ptr<HttpExchange> exchange;
  const ServiceBackend* backend = nullptr;
  std::string principal;
  std::unique_ptr<RequestReport> report;  // from arrival
  std::string body;
  bool base64 = false;
  absl::StatusOr<std::vector<ValidatedRequest>> validated = absl::UnknownError("not prepared");
};

bool TokenId(const Json& value) {
  return value.is_number_integer() && value.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
         value.get<int64_t>() <= std::numeric_limits<int32_t>::max();
}

// `input`: a string, an array of strings, an array of token ids, or an array of such arrays.
absl::Status ParseInputs(const Json& input, v1::EmbedRequest& out) {
  if (input.is_string()) {
    out.add_inputs()->set_text(input.get<std::string>());
    return absl::OkStatus();
  }
  if (!input.is_array() || input.empty()) {
    return WrongType("input", "a string or a non-empty array", input);
  }
  if (TokenId(input[0])) {  // one input as token ids
    auto* ids = out.add_inputs()->mutable_tokens()->mutable_ids();
    for (size_t i = 0; i < input.size(); ++i) {
      if (!TokenId(input[i]))
        return WrongType(absl::StrCat("input[", i, "]"), "a token id", input[i]);
      ids->Add(static_cast<int32_t>(input[i].get<int64_t>()));
    }
    return absl::OkStatus();
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const Json& item = input[i];
    const std::string field = absl::StrCat("input[", i, "]");
    if (item.is_string()) {
      out.add_inputs()->set_text(item.get<std::string>());
    } else if (item.is_array()) {
      auto* ids = out.add_inputs()->mutable_tokens()->mutable_ids();
      for (size_t j = 0; j < item.size(); ++j) {
        if (!TokenId(item[j])) {
          return WrongType(absl::StrCat(field, "[", j, "]"), "a token id", item[j]);
        }
        ids->Add(static_cast<int32_t>(item[j].get<int64_t>()));
      }
    } else {
      return WrongType(field, "a string or an array of token ids", item);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::EmbedRequest> ParseEmbeddingsRequest(const std::string& body,
                                                        const std::string& served, bool& base64) {
  absl::StatusOr<Json> parsed = ParseBody(body);
  if (!parsed.ok()) return parsed.status();
  const Fields f(*parsed);
  v1::EmbedRequest out;
  std::optional<std::string> model, format, text;
  TEXTGEN_RETURN_IF_ERROR(f.String("model", model));
  TEXTGEN_RETURN_IF_ERROR(CheckModelName(model.value_or(""), served));
  const Json* input = f.Find("input");
  if (input == nullptr) return FieldError("input", "input is missing");
  TEXTGEN_RETURN_IF_ERROR(ParseInputs(*input, out));
  TEXTGEN_RETURN_IF_ERROR(f.String("encoding_format", format));
  if (format && *format != "float" && *format != "base64") {
    return FieldError("encoding_format",
                      absl::StrCat("encoding_format must be \"float\" or \"base64\", got \"",
                                   format->substr(0, 64), "\""));
  }
  base64 = format == "base64";
  std::optional<int64_t> dimensions;
  TEXTGEN_RETURN_IF_ERROR(f.Integer("dimensions", dimensions));
  if (dimensions) {
    if (*dimensions < 1 || *dimensions > std::numeric_limits<int32_t>::max()) {
      return FieldError("dimensions", absl::StrCat("dimensions must be >= 1, got ", *dimensions));
    }
    out.set_dimensions(static_cast<uint32_t>(*dimensions));
  }
  std::optional<bool> normalize;  // textgen's extra
  TEXTGEN_RETURN_IF_ERROR(f.Bool("normalize", normalize));
  if (normalize) out.set_normalize(*normalize);
  TEXTGEN_RETURN_IF_ERROR(f.String("user", text));
  return out;
}

std::string Base64(const std::vector<float>& values) {
  // OpenAI's encoding: the float32 values' little-endian bytes (this machine's order).
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return absl::Base64Escape(bytes);
}

void Report(EmbeddingCall& call, const absl::Status& status, int prompt_tokens, int cached_tokens) {
  if (call.report->finished()) return;
  call.report->record().prompt_tokens = prompt_tokens;
  call.report->record().cached_tokens = cached_tokens;
  call.report->Finish(status);
}

void RespondError(EmbeddingCall& call, const absl::Status& status) {
  Report(call, status, 0, 0);
  call.exchange->Respond(ApiErrorResponse(status));
}

void Prepare(EmbeddingCall& call) {
  const ServiceBackend& backend = *call.backend;
  absl::StatusOr<v1::EmbedRequest> parsed =
      ParseEmbeddingsRequest(call.body, backend.model_info.name(), call.base64);
  call.body.clear();
  if (!parsed.ok()) {
    call.validated = parsed.status();
    return;
  }
  RequestContext context;
  context.arrival_time = call.report->arrival();
  context.principal = call.principal;
  call.validated = ValidateEmbedRequest(*parsed, *backend.tokenizer, backend.validation, context);
  if (call.validated.ok()) {
    call.report->record().request_id = call.validated->front().request_id;
  } else {
    // Fields in the OpenAI API's names: inputs[2].text -> input[2].
    OpenAiRequest named;
    named.kind = OpenAiRequest::Kind::kEmbeddings;
    call.validated = ToOpenAiFieldNames(call.validated.status(), named);
  }
}

// On the exchange's executor.
void Finish(const std::shared_ptr<EmbeddingCall>& call) {
  if (!call->validated.ok()) return RespondError(*call, call->validated.status());
  const ServiceBackend& backend = *call->backend;
  std::shared_ptr<EmbeddingBatch> batch = EmbeddingBatch::Start(
      *backend.scheduler, *std::move(call->validated),
      [call](absl::StatusOr<EmbeddingResult> result) {
        // Engine thread: the JSON is built on the exchange's executor.
        auto shared = std::make_shared<absl::StatusOr<EmbeddingResult>>(std::move(result));
        call->exchange->Post([call, shared] {
          if (!shared->ok()) return RespondError(*call, shared->status());
          Json data = Json::array();
          for (size_t i = 0; i < (*shared)->embeddings.size(); ++i) {
            const std::vector<float>& values = (*shared)->embeddings[i];
            Json embedding = call->base64 ? Json(Base64(values)) : Json(values);
            data.push_back(
                {{"object", "embedding"}, {"index", i}, {"embedding", std::move(embedding)}});
          }
          const int tokens = (*shared)->prompt_tokens;
          const Json body = {{"object", "list"},
                             {"data", std::move(data)},
                             {"model", call->backend->model_info.name()},
                             {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
          Report(*call, absl::OkStatus(), tokens, (*shared)->cached_tokens);
          call->exchange->Respond(
              HttpResponse::Json(200, body.dump(-1, ' ', false, Json::error_handler_t::replace)));
        });
      });
  // A client that goes away drops the inputs still queued or running.
  call->exchange->SetOnClose([call, weak = std::weak_ptr<EmbeddingBatch>(batch)] {
    if (auto running = weak.lock()) running->Cancel();
    Report(*call, absl::CancelledError("the client closed the connection"), 0, 0);
  });
}

}  // namespace

void ServeEmbeddings(const RouteCall& route, const EmbeddingsRouteOptions& options) {
  auto call = std::make_shared<EmbeddingCall>();
  call->exchange = route.exchange;
  call->backend = route.backend;
  call->principal = route.principal;
  call->report = std::make_unique<RequestReport>("http", options.observer, options.logger);
  call->body = route.request.body;
  // Finish runs on the exchange's executor, as every exchange call must.
  AdmitForPreparation(
      route.backend->preparation,
      [call] {
        Prepare(*call);
        call->exchange->Post([call] { Finish(call); });
      },
      [call](const absl::Status& refused) { RespondError(*call, refused); });
}

}  // namespace textgen::server::http
