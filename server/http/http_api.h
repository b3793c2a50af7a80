#pragma once

#include <memory>

#include "absl/strings/string_view.h"
#include "server/auth/auth_policy.h"
#include "server/core/service_backend.h"
#include "server/http/openai/openai_api.h"
#include "server/http/router.h"
#include "server/observability/logging.h"
#include "server/observability/request_observer.h"
#include "server/transport/http_server.h"

namespace textgen::server::http {

struct HttpApiOptions {
  auth::AuthPolicy auth = {};           // who may call; /health stays open
  RequestObserver* observer = nullptr;  // request outcomes (metrics); may be null
  Logger* logger = nullptr;             // one line per request; may be null
  OpenAiApiOptions openai;              // its observer and logger are the ones above
};

// The HTTP API as the server runs it: the route table of every API family on one port (the
// OpenAI family first, whose error shape also answers paths no route has; then textgen's own
// routes). Adding a family is a folder of its own under server/http/ and a line in this
// class's constructor. Until SetBackend() every route but /health answers 503. Thread-safe.
class HttpApi {
 public:
  explicit HttpApi(HttpApiOptions options);

  // Makes the routes ready. `backend` must outlive every request; call at most once.
  void SetBackend(const ServiceBackend* backend) { router_.SetBackend(backend); }
  // From now on /health answers 503 (generation requests get the scheduler's UNAVAILABLE).
  void StartDraining() { router_.StartDraining(); }

  // The HTTP handler (routes everything).
  void Handle(const HttpRequest& request, std::shared_ptr<HttpExchange> exchange) const {
    router_.Handle(request, std::move(exchange));
  }
  // The response for errors the HTTP layer finds itself (413, 431, malformed HTTP).
  HttpResponse TransportError(int status, absl::string_view message) const {
    return router_.TransportError(status, message);
  }
  const HttpRouter& router() const { return router_; }

 private:
  OpenAiApi openai_;
  HttpRouter router_;
};

}  // namespace textgen::server::http
