#pragma once

#include <atomic>
#include <memory>

#include "absl/time/time.h"
#include "server/auth/api_keys.h"
#include "server/core/service_backend.h"
#include "server/http/choice_writer.h"
#include "server/http/openai_request.h"
#include "server/http/response_store.h"
#include "server/observability/logging.h"
#include "server/observability/request_observer.h"
#include "server/scheduler/stream_sink.h"
#include "server/transport/http_server.h"

namespace textgen::server::http {

struct OpenAiApiOptions {
  // API keys ("Authorization: Bearer KEY"); null = no authentication. /health stays open.
  const auth::Authenticator* authenticator = nullptr;
  // Without API keys, under mutual TLS: the client certificate's subject is the principal.
  bool principal_from_client_certificate = false;
  RequestObserver* observer = nullptr;  // generation outcomes (metrics); may be null
  Logger* logger = nullptr;             // one line per generation request; may be null
  size_t max_buffered_events = kDefaultMaxBufferedEvents;  // per request, as on gRPC
  ResponseStoreOptions response_store;                     // the Responses API's stored responses
};

// The OpenAI-compatible routes over the same backend as the gRPC service:
//   POST /v1/chat/completions, POST /v1/completions, POST /v1/responses (streaming or not),
//   GET and DELETE /v1/responses/{id}, POST /v1/embeddings (embeddings_route.h), GET /v1/models,
//   GET /v1/models/{id}, POST /tokenize, POST /detokenize (tokenize_route.h), GET /health.
// A request is parsed into textgen's own request message and goes through the same
// validation, scheduler, limits and metrics as gRPC; errors come back in OpenAI's JSON shape
// (see ApiErrorFromStatus). Until SetBackend() every route but /health answers 503.
// Thread-safe.
class OpenAiApi {
 public:
  explicit OpenAiApi(const OpenAiApiOptions& options);

  // Makes the routes ready. `backend` must outlive every request; call at most once.
  void SetBackend(const ServiceBackend* backend);
  // From now on /health answers 503 (generation requests get the scheduler's UNAVAILABLE).
  void StartDraining();

  // The HTTP handler (routes everything).
  void Handle(const HttpRequest& request, std::shared_ptr<HttpExchange> exchange);
  // The response for errors the HTTP layer finds itself (413, 431, malformed HTTP).
  static HttpResponse TransportError(int status, absl::string_view message);

 private:
  struct Preparation;
  // POST /v1/chat/completions, /v1/completions and /v1/responses: Prepare runs on the
  // backend's preparation pool (parsing, checks, rendering, tokenizing), Finish on the
  // exchange's executor (Submit, the stream, or the error response).
  void Generate(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange,
                OpenAiRequest::Kind kind, const ServiceBackend& backend,
                const std::string& principal);
  absl::StatusOr<OpenAiRequest> Parse(Preparation& preparation);
  void Prepare(Preparation& preparation);
  void Finish(Preparation& preparation);
  // The response writers of the validated `requests` (one per choice).
  std::vector<std::unique_ptr<ChoiceWriter>> Writers(Preparation& preparation,
                                                     const std::vector<ValidatedRequest>& requests);
  // GET and DELETE /v1/responses/{id}.
  void StoredResponse(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange,
                      absl::string_view id, const std::string& principal);
  void ListModels(const std::shared_ptr<HttpExchange>& exchange, const ServiceBackend& backend,
                  absl::string_view only);

  const OpenAiApiOptions options_;
  std::atomic<const ServiceBackend*> backend_{nullptr};
  std::atomic<bool> draining_{false};
  const absl::Time started_ = absl::Now();
  ResponseStore responses_;
};

}  // namespace textgen::server::http
