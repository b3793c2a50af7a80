#pragma once

#include <memory>

#include "server/core/service_backend.h"
#include "server/transport/http_server.h"

namespace textgen::server::http {

// POST /tokenize and POST /detokenize: the gRPC Tokenize and Detokenize in their protobuf JSON
// form (field names as in the .proto or lowerCamelCase; unknown fields are refused):
//   /tokenize   {"text": "...", "add_bos": true, "parse_special": false}
//               -> {"ids": [...], "tokens": ["...", ...]}
//   /detokenize {"ids": [...], "render_control": false} -> {"text": "..."}
// The work (up to 1 MiB of text) runs on the backend's preparation pool, never on an HTTP I/O
// thread; errors come back in OpenAI's error JSON.
void ServeTokenizeRoute(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange,
                        const ServiceBackend& backend, bool detokenize);

}  // namespace textgen::server::http
