#include "server/http/openai_api.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "server/core/chat_validation.h"
#include "server/core/validation.h"
#include "server/http/embeddings_route.h"
#include "server/http/openai_field_names.h"
#include "server/http/openai_request.h"
#include "server/http/openai_response.h"
#include "server/http/openai_stream.h"
#include "server/http/responses_request.h"
#include "server/http/responses_writer.h"
#include "server/http/tokenize_route.h"
#include "server/observability/logging.h"

namespace textgen::server::http {
namespace {

constexpr absl::string_view kModelsPrefix = "/v1/models/";
constexpr absl::string_view kResponsesPrefix = "/v1/responses/";

HttpResponse JsonResponse(int status, const Json& body) {
  return HttpResponse::Json(status, body.dump(-1, ' ', false, Json::error_handler_t::replace));
}

HttpResponse ErrorResponse(const ApiError& error) {
  return HttpResponse::Json(error.http_status, ApiErrorJson(error));
}

HttpResponse MethodNotAllowed(const HttpRequest& request, const char* allowed) {
  HttpResponse response = ErrorResponse(ApiErrorForHttpStatus(
      405, absl::StrCat(request.method, " is not allowed on ", request.path, "; use ", allowed)));
  response.headers.emplace_back("Allow", allowed);
  return response;
}

absl::Status LoadingError() {
  return absl::UnavailableError("the model is still loading; retry in a moment");
}

}  // namespace

OpenAiApi::OpenAiApi(const OpenAiApiOptions& options)
    : options_(options), responses_(options.response_store) {}

void OpenAiApi::SetBackend(const ServiceBackend* backend) {
  backend_.store(backend, std::memory_order_release);
}

void OpenAiApi::StartDraining() { draining_ = true; }

HttpResponse OpenAiApi::TransportError(int status, absl::string_view message) {
  return ErrorResponse(ApiErrorForHttpStatus(status, message));
}

void OpenAiApi::Handle(const HttpRequest& request, std::shared_ptr<HttpExchange> exchange) {
  const ServiceBackend* backend = backend_.load(std::memory_order_acquire);
  const std::string& path = request.path;
  if (path == "/health") {
    if (request.method != "GET") {
      return exchange->Respond(MethodNotAllowed(request, "GET"));
    }
    const char* state = backend == nullptr ? "loading" : draining_ ? "draining" : "ok";
    return exchange->Respond(
        JsonResponse(absl::string_view(state) == "ok" ? 200 : 503, Json{{"status", state}}));
  }
  const bool chat = path == "/v1/chat/completions";
  const bool completion = path == "/v1/completions";
  const bool responses = path == "/v1/responses";
  const bool embeddings = path == "/v1/embeddings";
  const bool stored_response = absl::StartsWith(path, kResponsesPrefix);
  const bool models = path == "/v1/models" || absl::StartsWith(path, kModelsPrefix);
  const bool tokenize = path == "/tokenize";
  const bool detokenize = path == "/detokenize";
  if (!chat && !completion && !responses && !embeddings && !stored_response && !models &&
      !tokenize && !detokenize) {
    return exchange->Respond(ErrorResponse(ApiErrorForHttpStatus(
        404,
        absl::StrCat("no route ", request.method, " ", path,
                     "; textgen serves POST /v1/chat/completions, POST /v1/completions, "
                     "POST /v1/responses, GET and DELETE /v1/responses/{id}, POST /v1/embeddings, "
                     "GET /v1/models, POST /tokenize, POST /detokenize and GET /health"))));
  }
  std::string principal;
  if (options_.authenticator != nullptr) {
    const std::string* header = request.Header("authorization");
    absl::StatusOr<std::string> authenticated =
        options_.authenticator->Authenticate(header == nullptr ? "" : *header);
    if (!authenticated.ok()) {
      HttpResponse response = ErrorResponse(ApiErrorFromStatus(authenticated.status()));
      response.headers.emplace_back("WWW-Authenticate", "Bearer");
      return exchange->Respond(std::move(response));
    }
    principal = *std::move(authenticated);
  } else if (options_.principal_from_client_certificate) {
    // The handshake already refused clients without a valid certificate; this is the name.
    if (request.client_certificate_subject.empty()) {
      return exchange->Respond(ErrorResponse(
          ApiErrorFromStatus(absl::UnauthenticatedError("no verified client certificate"))));
    }
    principal = request.client_certificate_subject;
  }
  if (models && request.method != "GET") {
    return exchange->Respond(MethodNotAllowed(request, "GET"));
  }
  if (stored_response && request.method != "GET" && request.method != "DELETE") {
    return exchange->Respond(MethodNotAllowed(request, "GET, DELETE"));
  }
  if (!models && !stored_response && request.method != "POST") {
    return exchange->Respond(MethodNotAllowed(request, "POST"));
  }
  if (backend == nullptr)
    return exchange->Respond(ErrorResponse(ApiErrorFromStatus(LoadingError())));
  if (tokenize || detokenize) return ServeTokenizeRoute(request, exchange, *backend, detokenize);
  if (models) {
    return ListModels(exchange, *backend,
                      path.size() > kModelsPrefix.size()
                          ? absl::string_view(path).substr(kModelsPrefix.size())
                          : absl::string_view());
  }
  if (embeddings) {
    return ServeEmbeddings(
        request, exchange, *backend,
        {.principal = principal, .observer = options_.observer, .logger = options_.logger});
  }
  if (stored_response) {
    return StoredResponse(request, exchange,
                          absl::string_view(path).substr(kResponsesPrefix.size()), principal);
  }
  const OpenAiRequest::Kind kind = chat        ? OpenAiRequest::Kind::kChat
                                   : responses ? OpenAiRequest::Kind::kResponses
                                               : OpenAiRequest::Kind::kCompletion;
  Generate(request, exchange, kind, *backend, principal);
}

void OpenAiApi::StoredResponse(const HttpRequest& request,
                               const std::shared_ptr<HttpExchange>& exchange, absl::string_view id,
                               const std::string& principal) {
  if (request.method == "DELETE") {
    if (!responses_.Delete(principal, id)) {
      return exchange->Respond(ErrorResponse(ApiErrorFromStatus(
          absl::NotFoundError(absl::StrCat("no stored response '", id.substr(0, 64), "'")))));
    }
    return exchange->Respond(JsonResponse(
        200, Json{{"id", std::string(id)}, {"object", "response"}, {"deleted", true}}));
  }
  absl::StatusOr<std::shared_ptr<const ResponseStore::Entry>> entry = responses_.Get(principal, id);
  if (!entry.ok()) return exchange->Respond(ErrorResponse(ApiErrorFromStatus(entry.status())));
  exchange->Respond(HttpResponse::Json(200, (*entry)->response_json));
}

void OpenAiApi::ListModels(const std::shared_ptr<HttpExchange>& exchange,
                           const ServiceBackend& backend, absl::string_view only) {
  const v1::ModelInfo& info = backend.model_info;
  const Json model = {{"id", info.name()},
                      {"object", "model"},
                      {"created", absl::ToUnixSeconds(started_)},
                      {"owned_by", "textgen"},
                      {"context_length", info.context_length()},
                      {"architecture", info.architecture()},
                      {"file_dtype", info.file_dtype()}};
  if (only.empty()) {
    return exchange->Respond(
        JsonResponse(200, Json{{"object", "list"}, {"data", Json::array({model})}}));
  }
  if (only != info.name()) {
    ApiError error = ApiErrorForHttpStatus(
        404, absl::StrCat("the model '", only, "' does not exist; this server serves '",
                          info.name(), "'"));
    error.code = "model_not_found";
    return exchange->Respond(ErrorResponse(error));
  }
  exchange->Respond(JsonResponse(200, model));
}

// A generation request on its way through the preparation pool: made on the exchange's
// executor, filled on a pool thread (parse, checks, render, tokenize), finished back on the
// executor (Submit, stream).
struct OpenAiApi::Preparation {
  std::shared_ptr<HttpExchange> exchange;
  const ServiceBackend* backend = nullptr;
  OpenAiRequest::Kind kind = OpenAiRequest::Kind::kChat;
  std::string principal;
  absl::Time arrival;
  std::string body;
  std::vector<std::string> routing_header;  // every x-session-id value
  std::optional<std::string> request_id;    // the X-Request-Id header
  // Results: an error to answer with, or the parsed and validated request.
  std::optional<ApiError> error;
  absl::Status error_status;
  std::optional<OpenAiRequest> parsed;
  std::optional<ValidatedRequest> validated;
  // Responses: the parts of the request the response object repeats, and the conversation
  // (without instructions) that a continuation of this response builds on.
  Json responses_echo;
  bool store = false;
  std::vector<v1::ChatMessage> conversation;
};

void OpenAiApi::Generate(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange,
                         OpenAiRequest::Kind kind, const ServiceBackend& backend,
                         const std::string& principal) {
  auto preparation = std::make_shared<Preparation>();
  preparation->exchange = exchange;
  preparation->backend = &backend;
  preparation->kind = kind;
  preparation->principal = principal;
  preparation->arrival = absl::Now();
  preparation->body = request.body;
  for (const auto& [name, value] : request.headers) {
    if (name == kSessionRoutingHeader) preparation->routing_header.push_back(value);
  }
  if (const std::string* id = request.Header("x-request-id")) preparation->request_id = *id;
  if (backend.preparation == nullptr) {
    Prepare(*preparation);
    return Finish(*preparation);
  }
  // The exchange's Post runs the rest on its executor, as every exchange call must.
  absl::Status posted = backend.preparation->Post([this, preparation] {
    Prepare(*preparation);
    preparation->exchange->Post([this, preparation] { Finish(*preparation); });
  });
  if (!posted.ok()) {
    preparation->error = ApiErrorFromStatus(posted);
    preparation->error_status = posted;
    Finish(*preparation);
  }
}

// Parses the body as its route's request; Responses: also continues the stored response it
// names and assembles the conversation.
absl::StatusOr<OpenAiRequest> OpenAiApi::Parse(Preparation& p) {
  switch (p.kind) {
    case OpenAiRequest::Kind::kChat:
      return ParseChatCompletionRequest(p.body);
    case OpenAiRequest::Kind::kCompletion:
      return ParseCompletionRequest(p.body);
    case OpenAiRequest::Kind::kEmbeddings:  // served by embeddings_route.cc, never here
      return absl::InternalError("an embeddings request reached the generation path");
    case OpenAiRequest::Kind::kResponses:
      break;
  }
  absl::StatusOr<ResponsesRequest> parsed = ParseResponsesRequest(p.body);
  if (!parsed.ok()) return parsed.status();
  std::shared_ptr<const ResponseStore::Entry> previous;
  if (!parsed->previous_response_id.empty()) {
    absl::StatusOr<std::shared_ptr<const ResponseStore::Entry>> found =
        responses_.Get(p.principal, parsed->previous_response_id);
    if (!found.ok()) {
      absl::Status status = found.status();
      status.SetPayload(kOpenAiParamPayload, absl::Cord("previous_response_id"));
      return status;
    }
    previous = *std::move(found);
  }
  p.conversation = AssembleConversation(
      *parsed, previous ? previous->conversation : std::vector<v1::ChatMessage>());
  p.responses_echo = std::move(parsed->echo);
  p.store = parsed->store;
  return std::move(parsed->request);
}

void OpenAiApi::Prepare(Preparation& p) {
  const auto fail = [&](const absl::Status& status, ApiError error) {
    p.error_status = status;
    p.error = std::move(error);
  };
  absl::StatusOr<OpenAiRequest> parsed = Parse(p);
  if (!parsed.ok()) return fail(parsed.status(), ApiErrorFromStatus(parsed.status()));
  const bool completion = p.kind == OpenAiRequest::Kind::kCompletion;
  const std::string& served = p.backend->model_info.name();
  if (!parsed->model.empty() && parsed->model != served) {
    absl::Status status =
        absl::NotFoundError(absl::StrCat("the model '", parsed->model.substr(0, 256),
                                         "' does not exist; this server serves '", served, "'"));
    ApiError error = ApiErrorFromStatus(status);
    error.code = "model_not_found";
    error.param = "model";
    return fail(status, std::move(error));
  }
  std::vector<absl::string_view> routing_header(p.routing_header.begin(), p.routing_header.end());
  if (absl::Status status = CheckSessionRoutingHeader(
          routing_header, completion ? parsed->completion.session_id() : parsed->chat.session_id());
      !status.ok()) {
    ApiError error = ApiErrorFromStatus(status);
    error.param = "session_id";
    return fail(status, std::move(error));
  }
  if (p.request_id.has_value()) {
    if (completion) {
      parsed->completion.set_request_id(*p.request_id);
    } else {
      parsed->chat.set_request_id(*p.request_id);
    }
  }
  RequestContext context;
  context.arrival_time = p.arrival;
  context.principal = p.principal;
  const ServiceBackend& backend = *p.backend;
  absl::StatusOr<ValidatedRequest> validated =
      completion ? ValidateGenerateRequest(parsed->completion, *backend.tokenizer,
                                           backend.validation, context)
                 : ValidateChatRequest(parsed->chat, backend.chat_templates, *backend.tokenizer,
                                       backend.validation, context,
                                       parsed->tools ? &*parsed->tools : nullptr);
  if (!validated.ok()) {
    const absl::Status renamed = ToOpenAiFieldNames(validated.status(), *parsed);
    return fail(renamed, ApiErrorFromStatus(renamed));
  }
  p.body.clear();         // no longer needed; may be megabytes
  parsed->tools.reset();  // the plan holds what it needs of them
  p.parsed = *std::move(parsed);
  p.validated = *std::move(validated);
}

std::vector<std::unique_ptr<ChoiceWriter>> OpenAiApi::Writers(
    Preparation& p, const std::vector<ValidatedRequest>& requests) {
  const ServiceBackend& backend = *p.backend;
  const ValidatedRequest& first = requests.front();
  std::vector<std::unique_ptr<ChoiceWriter>> writers;
  if (p.kind == OpenAiRequest::Kind::kResponses) {
    ResponsesWriterOptions options;
    absl::BitGen random;
    options.id = absl::StrCat(kResponseIdPrefix,
                              absl::Hex(absl::Uniform<uint64_t>(random), absl::kZeroPad16),
                              absl::Hex(absl::Uniform<uint64_t>(random), absl::kZeroPad16));
    options.created_at = absl::ToUnixSeconds(p.arrival);
    options.model = backend.model_info.name();
    options.echo = std::move(p.responses_echo);
    options.logprobs = first.output.logprobs;
    options.last_prompt_token = first.prompt_tokens.back();
    options.reply = first.reply;
    if (p.store) {
      options.on_done = [this, principal = p.principal, id = options.id,
                         conversation = std::move(p.conversation)](const Json& response,
                                                                   v1::ChatMessage reply) {
        ResponseStore::Entry entry;
        entry.response_json = response.dump(-1, ' ', false, Json::error_handler_t::replace);
        entry.conversation = conversation;
        entry.conversation.push_back(std::move(reply));
        responses_.Put(principal, id, std::move(entry));
      };
    }
    writers.push_back(std::make_unique<ResponsesWriter>(std::move(options), backend.tokenizer));
    return writers;
  }
  const bool chat = p.kind == OpenAiRequest::Kind::kChat;
  OpenAiResponseWriter::Options options;
  options.kind = chat ? OpenAiResponseWriter::Kind::kChat : OpenAiResponseWriter::Kind::kCompletion;
  options.id = absl::StrCat(chat ? "chatcmpl-" : "cmpl-", first.request_id);
  options.created = absl::ToUnixSeconds(p.arrival);
  options.model = backend.model_info.name();
  options.logprobs = first.output.logprobs;
  options.include_usage = p.parsed->stream && p.parsed->include_usage;
  options.last_prompt_token = first.prompt_tokens.back();
  for (size_t i = 0; i < requests.size(); ++i) {
    options.index = static_cast<int>(i);
    options.reply = requests[i].reply;
    writers.push_back(std::make_unique<OpenAiResponseWriter>(options, backend.tokenizer));
  }
  return writers;
}

void OpenAiApi::Finish(Preparation& p) {
  RequestRecord record;
  record.api = "http";
  const auto reject = [&](const absl::Status& status, const ApiError& error) {
    record.code = status.code();
    record.message = std::string(status.message());
    record.duration_seconds = absl::ToDoubleSeconds(absl::Now() - p.arrival);
    ReportRequestDone(record, options_.observer, options_.logger);
    p.exchange->Respond(ErrorResponse(error));
  };
  if (p.error.has_value()) return reject(p.error_status, *p.error);
  const ServiceBackend& backend = *p.backend;
  ValidatedRequest& validated = *p.validated;
  const OpenAiRequest& parsed = *p.parsed;
  record.request_id = validated.request_id;
  record.prompt_tokens = static_cast<int>(validated.prompt_tokens.size());
  // `n` choices: the same request n times, choice i sampled with seed + i (and its tool call
  // ids drawn from id_seed + i). Submitted together, they compute the prompt once: the first
  // admitted computes it, the others take its blocks from the prefix cache.
  std::vector<ValidatedRequest> requests;
  for (int i = 0; i < parsed.choices; ++i) {
    ValidatedRequest copy = i + 1 < parsed.choices ? validated : std::move(validated);
    copy.sampling.seed += static_cast<uint64_t>(i);
    if (copy.reply.has_value()) copy.reply->id_seed += static_cast<uint64_t>(i);
    requests.push_back(std::move(copy));
  }
  std::vector<std::unique_ptr<ChoiceWriter>> writers = Writers(p, requests);
  if (parsed.returned_choices > 0) {
    // best_of ranks the candidates by their tokens' log-probabilities: the engine reports them
    // (the writers print them only when the client asked).
    for (ValidatedRequest& request : requests) request.output.logprobs = true;
  }
  OpenAiStreamOptions stream_options;
  stream_options.stream = parsed.stream;
  stream_options.returned_choices = parsed.returned_choices;
  stream_options.max_buffered_events = options_.max_buffered_events;
  stream_options.observer = options_.observer;
  stream_options.logger = options_.logger;
  auto stream = std::make_shared<OpenAiStream>(p.exchange, stream_options, std::move(writers),
                                               record, p.arrival);
  for (int i = 0; i < parsed.choices; ++i) {
    if (absl::Status status = backend.scheduler->Submit(std::move(requests[i]), stream->Sink(i));
        !status.ok()) {
      if (i == 0) return reject(status, ApiErrorFromStatus(status));
      return stream->Abort(status);  // the choices submitted so far are dropped
    }
  }
  // Events the engine pushes from now on are drained on this exchange's executor, after this
  // task returns: Begin() comes first.
  stream->Begin();
}

}  // namespace textgen::server::http
