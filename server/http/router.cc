#include "server/http/router.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/observability/request_report.h"

namespace textgen::server::http {
namespace {

constexpr absl::string_view kArgument = "{id}";

}  // namespace

bool MatchRoutePath(absl::string_view route_path, absl::string_view path,
                    absl::string_view* argument) {
  *argument = {};
  if (!absl::EndsWith(route_path, kArgument)) return route_path == path;
  const absl::string_view prefix = route_path.substr(0, route_path.size() - kArgument.size());
  if (!absl::StartsWith(path, prefix) || path.size() == prefix.size()) return false;
  *argument = path.substr(prefix.size());
  return true;
}

void HttpRouter::Add(ApiFamily family) {
  errors_.push_back(std::make_unique<ErrorWriter>(std::move(family.errors)));
  for (HttpRoute& route : family.routes) {
    entries_.push_back(Entry{std::move(route), errors_.back().get()});
  }
}

std::string HttpRouter::RouteList() const {
  return absl::StrJoin(entries_, ", ", [](std::string* out, const Entry& entry) {
    absl::StrAppend(out, entry.route.method, " ", entry.route.path);
  });
}

HttpResponse HttpRouter::TransportError(int http_status, absl::string_view message) const {
  return (*errors_.front())(http_status, absl::InvalidArgumentError(message));
}

void HttpRouter::Refuse(HttpExchange& exchange, const ErrorWriter& errors, int http_status,
                        const absl::Status& status,
                        std::vector<std::pair<std::string, std::string>> headers) const {
  RequestReport report("http", options_.observer, options_.logger);
  report.Finish(status);
  HttpResponse response = errors(http_status, status);
  for (auto& header : headers) response.headers.push_back(std::move(header));
  exchange.Respond(std::move(response));
}

void HttpRouter::Handle(const HttpRequest& request, std::shared_ptr<HttpExchange> exchange) const {
  // The client's path, cut to keep a refusal's message readable.
  const absl::string_view shown_path = absl::string_view(request.path).substr(0, 256);
  // The path's routes: the one for this method, and the methods it allows.
  const Entry* found = nullptr;
  const Entry* path_match = nullptr;
  absl::string_view argument;
  std::vector<absl::string_view> allowed;
  for (const Entry& entry : entries_) {
    absl::string_view entry_argument;
    if (!MatchRoutePath(entry.route.path, request.path, &entry_argument)) continue;
    if (path_match == nullptr) path_match = &entry;
    allowed.push_back(entry.route.method);
    if (found == nullptr && entry.route.method == request.method) {
      found = &entry;
      argument = entry_argument;
    }
  }
  if (path_match == nullptr) {
    return Refuse(*exchange, *errors_.front(), 404,
                  absl::NotFoundError(absl::StrCat("no route ", request.method, " ", shown_path,
                                                   "; textgen serves ", RouteList())));
  }
  const ErrorWriter& errors = *path_match->errors;
  std::string principal;
  if (!path_match->route.open) {
    absl::StatusOr<std::string> authenticated = options_.auth.Principal(
        {.authorization =
             [&] {
               const std::string* header = request.Header("authorization");
               return header == nullptr ? absl::string_view() : absl::string_view(*header);
             }(),
         .client_certificate_subject = request.client_certificate_subject});
    if (!authenticated.ok()) {
      std::vector<std::pair<std::string, std::string>> headers;
      if (options_.auth.uses_api_keys()) headers.emplace_back("WWW-Authenticate", "Bearer");
      return Refuse(*exchange, errors, 401, authenticated.status(), std::move(headers));
    }
    principal = *std::move(authenticated);
  }
  if (found == nullptr) {
    const std::string allow = absl::StrJoin(allowed, ", ");
    return Refuse(*exchange, errors, 405,
                  absl::UnimplementedError(absl::StrCat(request.method, " is not allowed on ",
                                                        shown_path, "; use ", allow)),
                  {{"Allow", allow}});
  }
  const ServiceBackend* backend = backend_.load(std::memory_order_acquire);
  if (backend == nullptr && !found->route.open) {
    return Refuse(*exchange, errors, 503, ModelLoadingError());
  }
  found->route.handler(RouteCall{.request = request,
                                 .exchange = std::move(exchange),
                                 .principal = std::move(principal),
                                 .backend = backend,
                                 .draining = draining_.load(),
                                 .path_argument = argument});
}

}  // namespace textgen::server::http
