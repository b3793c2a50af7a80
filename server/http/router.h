#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/auth/auth_policy.h"
#include "server/core/service_backend.h"
#include "server/observability/logging.h"
#include "server/observability/request_observer.h"
#include "server/transport/http_server.h"

namespace textgen::server::http {

// What a route's handler is given.
struct RouteCall {
  const HttpRequest& request;
  std::shared_ptr<HttpExchange> exchange;
  std::string principal;            // who sent it (AuthPolicy); "" for open routes
  const ServiceBackend* backend;    // the loaded model; null only for open routes before loading
  bool draining = false;            // the server is shutting down
  absl::string_view path_argument;  // what follows a "{id}" route's prefix; empty otherwise
};

// How an API family writes an error: the HTTP status to answer with, and the status behind it
// (its message, code and fields).
using ErrorWriter = std::function<HttpResponse(int http_status, const absl::Status& status)>;

// One row of the route table.
struct HttpRoute {
  std::string method;  // "GET", "POST", "DELETE"
  // An exact path ("/v1/chat/completions"), or a prefix and a last segment of any value
  // ("/v1/models/{id}": RouteCall::path_argument is that segment).
  std::string path;
  // Served without credentials, and before the model is loaded (health checks).
  bool open = false;
  std::function<void(const RouteCall&)> handler;
};

// An API family: its error shape and its routes.
struct ApiFamily {
  ErrorWriter errors;
  std::vector<HttpRoute> routes;
};

struct HttpRouterOptions {
  auth::AuthPolicy auth = {};
  RequestObserver* observer = nullptr;  // counts the refusals below; may be null
  Logger* logger = nullptr;             // logs them; may be null
};

// The HTTP front end's one dispatcher, for every API family: finds the route (404 listing the
// table, 405 with Allow), applies the auth policy (401), waits for the model (503), then calls
// the route's handler. Each refusal is answered in the family's error shape and reported like
// any other request (metrics and the log line). Add every family before serving; Handle is
// then thread-safe.
class HttpRouter {
 public:
  explicit HttpRouter(HttpRouterOptions options) : options_(std::move(options)) {}

  // A family's routes; the first family's error shape is also the one for paths no route has.
  void Add(ApiFamily family);
  // Makes the routes that need the model ready. `backend` must outlive every request.
  void SetBackend(const ServiceBackend* backend) {
    backend_.store(backend, std::memory_order_release);
  }
  void StartDraining() { draining_ = true; }

  // The HTTP handler.
  void Handle(const HttpRequest& request, std::shared_ptr<HttpExchange> exchange) const;
  // The response for errors the transport finds itself (413, 431, malformed HTTP).
  HttpResponse TransportError(int http_status, absl::string_view message) const;
  // "POST /v1/chat/completions, GET /v1/models, ...": every route, in table order.
  std::string RouteList() const;

 private:
  struct Entry {
    HttpRoute route;
    const ErrorWriter* errors;  // its family's
  };
  void Refuse(HttpExchange& exchange, const ErrorWriter& errors, int http_status,
              const absl::Status& status,
              std::vector<std::pair<std::string, std::string>> headers = {}) const;

  const HttpRouterOptions options_;
  std::vector<std::unique_ptr<ErrorWriter>> errors_;  // per family; stable for entries_
  std::vector<Entry> entries_;
  std::atomic<const ServiceBackend*> backend_{nullptr};
  std::atomic<bool> draining_{false};
};

// The path a route matches with `path`'s: "/v1/models/{id}" matches "/v1/models/x" with
// argument "x"; an exact route matches only itself. False when it does not match.
bool MatchRoutePath(absl::string_view route_path, absl::string_view path,
                    absl::string_view* argument);

}  // namespace textgen::server::http
