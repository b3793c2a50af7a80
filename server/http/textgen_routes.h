#pragma once

#include "server/http/router.h"

namespace textgen::server::http {

// textgen's own routes, beside the API families clients bring:
//   GET  /health      open (no key, before loading): 200 {"status": "ok"}, or 503 with
//                     "loading" or "draining"
//   POST /tokenize    the gRPC Tokenize and Detokenize in their protobuf JSON form (field names
//   POST /detokenize  as in the .proto or lowerCamelCase; unknown fields are refused):
//     /tokenize   {"text": "...", "add_bos": true, "parse_special": false}
//                 -> {"ids": [...], "tokens": ["...", ...]}
//     /detokenize {"ids": [...], "render_control": false} -> {"text": "..."}
// The tokenizer's work (up to 1 MiB of text) runs on the backend's preparation pool, never on
// an HTTP I/O thread; errors come back in the default error JSON (api_error.h).
ApiFamily TextgenRoutes();

}  // namespace textgen::server::http
