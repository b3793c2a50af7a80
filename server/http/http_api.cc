#include "server/http/http_api.h"

#include <utility>

#include "server/http/textgen_routes.h"

namespace textgen::server::http {
namespace {

OpenAiApiOptions WithReporting(OpenAiApiOptions options, const HttpApiOptions& api) {
  options.observer = api.observer;
  options.logger = api.logger;
  return options;
}

}  // namespace

HttpApi::HttpApi(HttpApiOptions options)
    : openai_(WithReporting(options.openai, options)),
      router_(HttpRouterOptions{
          .auth = options.auth, .observer = options.observer, .logger = options.logger}) {
  // The route table: one line per API family.
  router_.Add(openai_.Routes());
  router_.Add(TextgenRoutes());
}

}  // namespace textgen::server::http
