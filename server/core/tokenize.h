#pragma once

#include "absl/status/status.h"
#include "model/tokenizer/tokenizer.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server {

// Tokenize and Detokenize, the same for gRPC and for HTTP's /tokenize and /detokenize (which
// read and write these messages in their JSON form). Limits are checked before the work:
// text of at most 1 MiB, at most 262,144 ids; a bad field is INVALID_ARGUMENT naming it.
// `default_add_bos`: what the model's file says when the request leaves add_bos unset.
absl::Status Tokenize(const model::Tokenizer& tokenizer, bool default_add_bos,
                      const v1::TokenizeRequest& request, v1::TokenizeResponse& response);
absl::Status Detokenize(const model::Tokenizer& tokenizer, const v1::DetokenizeRequest& request,
                        v1::DetokenizeResponse& response);

}  // namespace textgen::server
