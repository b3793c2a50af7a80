#include "server/http/openai/openai_api.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "server/core/admission.h"
#include "server/core/chat_validation.h"
#include "server/core/model_name.h"
#include "server/core/validation.h"
#include "server/http/api_error.h"
#include "server/http/openai/embeddings_route.h"
#include "server/http/openai/openai_field_names.h"
#include "server/http/openai/openai_request.h"
#include "server/http/openai/openai_response.h"
#include "server/http/openai/openai_stream.h"
#include "server/http/openai/responses_request.h"
#include "server/http/openai/responses_writer.h"
#include "server/observability/request_report.h"

namespace textgen::server::http {
namespace {

HttpResponse JsonResponse(int status, const Json& body) {
  return HttpResponse::Json(status, body.dump(-1, ' ', false, Json::error_handler_t::replace));
}

}  // namespace

OpenAiApi::OpenAiApi(const OpenAiApiOptions& options)
    : options_(options), responses_(options.response_store) {}

ApiFamily OpenAiApi::Routes() {
  const auto generate = [this](OpenAiRequest::Kind kind) {
    return [this, kind](const RouteCall& call) { Generate(call, kind); };
  };
  const auto embeddings = [this](const RouteCall& call) {
    ServeEmbeddings(call, {.observer = options_.observer, .logger = options_.logger});
  };
  const auto stored = [this](const RouteCall& call) { StoredResponse(call); };
  const auto models = [this](const RouteCall& call) { ListModels(call); };
  return ApiFamily{.errors = &WriteApiError,
                   .routes = {
                       {.method = "POST",
                        .path = "/v1/chat/completions",
                        .handler = generate(OpenAiRequest::Kind::kChat)},
                       {.method = "POST",
                        .path = "/v1/completions",
                        .handler = generate(OpenAiRequest::Kind::kCompletion)},
                       {.method = "POST",
                        .path = "/v1/responses",
                        .handler = generate(OpenAiRequest::Kind::kResponses)},
                       {.method = "GET", .path = "/v1/responses/{id}", .handler = stored},
                       {.method = "DELETE", .path = "/v1/responses/{id}", .handler = stored},
                       {.method = "POST", .path = "/v1/embeddings", .handler = embeddings},
                       {.method = "GET", .path = "/v1/models", .handler = models},
                       {.method = "GET", .path = "/v1/models/{id}", .handler = models},
                   }};
}

void OpenAiApi::StoredResponse(const RouteCall& call) {
  const absl::string_view id = call.path_argument;
  if (call.request.method == "DELETE") {
    if (!responses_.Delete(call.principal, id)) {
      return call.exchange->Respond(ApiErrorResponse(
          absl::NotFoundError(absl::StrCat("no stored response '", id.substr(0, 64), "'"))));
    }
    return call.exchange->Respond(JsonResponse(
        200, Json{{"id", std::string(id)}, {"object", "response"}, {"deleted", true}}));
  }
  absl::StatusOr<std::shared_ptr<const ResponseStore::Entry>> entry =
      responses_.Get(call.principal, id);
  if (!entry.ok()) return call.exchange->Respond(ApiErrorResponse(entry.status()));
  call.exchange->Respond(HttpResponse::Json(200, (*entry)->response_json));
}

void OpenAiApi::ListModels(const RouteCall& call) {
  const v1::ModelInfo& info = call.backend->model_info;
  const Json model = {{"id", info.name()},
                      {"object", "model"},
                      {"created", absl::ToUnixSeconds(started_)},
                      {"owned_by", "textgen"},
                      {"context_length", info.context_length()},
                      {"architecture", info.architecture()},
                      {"file_dtype", info.file_dtype()}};
  if (call.path_argument.empty()) {
    return call.exchange->Respond(
        JsonResponse(200, Json{{"object", "list"}, {"data", Json::array({model})}}));
  }
  if (absl::Status known = CheckModelName(call.path_argument, info.name()); !known.ok()) {
    return call.exchange->Respond(ApiErrorResponse(known));
  }
  call.exchange->Respond(JsonResponse(200, model));
}

// A generation request on its way through the preparation pool: made on the exchange's
// executor, filled on a pool thread (parse, checks, render, tokenize), finished back on the
// executor (Submit, stream).
struct OpenAiApi::Preparation {
  std::shared_ptr<HttpExchange> exchange;
  const ServiceBackend* backend = nullptr;
  OpenAiRequest::Kind kind = OpenAiRequest::Kind::kChat;
  std::string principal;
  std::unique_ptr<RequestReport> report;  // from arrival; the stream takes it over
  std::string body;
  std::vector<std::string> routing_header;  // every x-session-id value
  std::optional<std::string> request_id;    // the X-Request-Id header
  // Results: an error to answer with, or the parsed and validated request.
  absl::Status error;
  std::optional<OpenAiRequest> parsed;
  std::optional<ValidatedRequest> validated;
  // Responses: the parts of the request the response object repeats, and the conversation
  // (without instructions) that a continuation of this response builds on.
  Json responses_echo;
  bool store = false;
  std::vector<v1::ChatMessage> conversation;
};

void OpenAiApi::Generate(const RouteCall& call, OpenAiRequest::Kind kind) {
  auto preparation = std::make_shared<Preparation>();
  preparation->exchange = call.exchange;
  preparation->backend = call.backend;
  preparation->kind = kind;
  preparation->principal = call.principal;
  preparation->report = std::make_unique<RequestReport>("http", options_.observer, options_.logger);
  preparation->body = call.request.body;
  for (const auto& [name, value] : call.request.headers) {
    if (name == kSessionRoutingHeader) preparation->routing_header.push_back(value);
  }
  if (const std::string* id = call.request.Header("x-request-id")) preparation->request_id = *id;
  // Finish runs on the exchange's executor, as every exchange call must.
  AdmitForPreparation(
      call.backend->preparation,
      [this, preparation] {
        Prepare(*preparation);
        preparation->exchange->Post([this, preparation] { Finish(*preparation); });
      },
      [this, preparation](const absl::Status& refused) {
        preparation->error = refused;
        Finish(*preparation);
      });
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
      status.SetPayload(kParamPayload, absl::Cord("previous_response_id"));
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
  absl::StatusOr<OpenAiRequest> parsed = Parse(p);
  if (!parsed.ok()) {
    p.error = parsed.status();
    return;
  }
  const bool completion = p.kind == OpenAiRequest::Kind::kCompletion;
  if (absl::Status known = CheckModelName(parsed->model, p.backend->model_info.name());
      !known.ok()) {
    p.error = known;
    return;
  }
  std::vector<absl::string_view> routing_header(p.routing_header.begin(), p.routing_header.end());
  if (absl::Status status = CheckSessionRoutingHeader(
          routing_header, completion ? parsed->completion.session_id() : parsed->chat.session_id());
      !status.ok()) {
    status.SetPayload(kParamPayload, absl::Cord("session_id"));
    p.error = status;
    return;
  }
  if (p.request_id.has_value()) {
    if (completion) {
      parsed->completion.set_request_id(*p.request_id);
    } else {
      parsed->chat.set_request_id(*p.request_id);
    }
  }
  RequestContext context;
  context.arrival_time = p.report->arrival();
  context.principal = p.principal;
  const ServiceBackend& backend = *p.backend;
  absl::StatusOr<ValidatedRequest> validated =
      completion ? ValidateGenerateRequest(parsed->completion, *backend.tokenizer,
                                           backend.validation, context)
                 : ValidateChatRequest(parsed->chat, backend.chat_templates, *backend.tokenizer,
                                       backend.validation, context,
                                       parsed->tools ? &*parsed->tools : nullptr);
  if (!validated.ok()) {
    p.error = ToOpenAiFieldNames(validated.status(), *parsed);
    return;
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
    options.created_at = absl::ToUnixSeconds(p.report->arrival());
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
  options.created = absl::ToUnixSeconds(p.report->arrival());
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
  if (!p.error.ok()) {
    p.report->Finish(p.error);
    return p.exchange->Respond(ApiErrorResponse(p.error));
  }
  const ServiceBackend& backend = *p.backend;
  ValidatedRequest& validated = *p.validated;
  const OpenAiRequest& parsed = *p.parsed;
  RequestRecord& record = p.report->record();
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
  auto stream = std::make_shared<OpenAiStream>(p.exchange, stream_options, std::move(writers),
                                               std::move(p.report));
  for (int i = 0; i < parsed.choices; ++i) {
    if (absl::Status status = backend.scheduler->Submit(std::move(requests[i]), stream->Sink(i));
        !status.ok()) {
      return stream->Abort(status);  // the choices submitted so far are dropped
    }
  }
  // Events the engine pushes from now on are drained on this exchange's executor, after this
  // task returns: Begin() comes first.
  stream->Begin();
}

}  // namespace textgen::server::http
