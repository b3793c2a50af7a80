#pragma once

#include <memory>
#include <string>

#include "server/http/router.h"
#include "server/observability/logging.h"
#include "server/observability/request_observer.h"

namespace textgen::server::http {

struct EmbeddingsRouteOptions {
  RequestObserver* observer = nullptr;  // may be null
  Logger* logger = nullptr;             // may be null
};

// POST /v1/embeddings (OpenAI's shape): `input` a string, strings, token ids or arrays of
// them; `encoding_format` "float" or "base64" (the float32 values' bytes); `dimensions`
// (the first N values, then normalized); textgen's extra `normalize` (default true). Parsing
// and tokenizing run on the preparation pool; every input is a sequence of its own in the
// scheduler (server/core/embedding.h); the response is {"object": "list", "data":
// [{"object": "embedding", "index", "embedding"}], "model", "usage"}. Errors in OpenAI's
// shape, naming the parameter.
void ServeEmbeddings(const RouteCall& call, const EmbeddingsRouteOptions& options);

}  // namespace textgen::server::http
