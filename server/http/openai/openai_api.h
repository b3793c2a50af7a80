#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "server/core/service_backend.h"
#include "server/http/openai/choice_writer.h"
#include "server/http/openai/openai_request.h"
#include "server/http/openai/response_store.h"
#include "server/http/router.h"
#include "server/observability/logging.h"
#include "server/observability/request_observer.h"
#include "server/scheduler/stream_sink.h"

namespace textgen::server::http {

struct OpenAiApiOptions {
  RequestObserver* observer = nullptr;  // generation outcomes (metrics); may be null
  Logger* logger = nullptr;             // one line per request; may be null
  size_t max_buffered_events = kDefaultMaxBufferedEvents;  // per request, as on gRPC
  ResponseStoreOptions response_store;                     // the Responses API's stored responses
};

// The OpenAI API family over the same backend as the gRPC service:
//   POST /v1/chat/completions, POST /v1/completions, POST /v1/responses (streaming or not),
//   GET and DELETE /v1/responses/{id}, POST /v1/embeddings (embeddings_route.h), GET /v1/models,
//   GET /v1/models/{id}.
// A request is parsed into textgen's own request message and goes through the same
// validation, scheduler, limits and metrics as gRPC; errors come back in OpenAI's JSON shape
// (ApiErrorResponse). Routing, authentication and the wait for the model are the router's.
// Thread-safe.
class OpenAiApi {
 public:
  explicit OpenAiApi(const OpenAiApiOptions& options);

  // The family's rows of the route table; the handlers use this object, which must outlive
  // them.
  ApiFamily Routes();

 private:
  struct Preparation;
  // POST /v1/chat/completions, /v1/completions and /v1/responses: Prepare runs on the
  // backend's preparation pool (parsing, checks, rendering, tokenizing), Finish on the
  // exchange's executor (Submit, the stream, or the error response).
  void Generate(const RouteCall& call, OpenAiRequest::Kind kind);
  absl::StatusOr<OpenAiRequest> Parse(Preparation& preparation);
  void Prepare(Preparation& preparation);
  void Finish(Preparation& preparation);
  // The response writers of the validated `requests` (one per choice).
  std::vector<std::unique_ptr<ChoiceWriter>> Writers(Preparation& preparation,
                                                     const std::vector<ValidatedRequest>& requests);
  // GET and DELETE /v1/responses/{id}.
  void StoredResponse(const RouteCall& call);
  // GET /v1/models and /v1/models/{id}.
  void ListModels(const RouteCall& call);

  const OpenAiApiOptions options_;
  const absl::Time started_ = absl::Now();
  ResponseStore responses_;
};

}  // namespace textgen::server::http
