#pragma once

#include "absl/status/status.h"
#include "server/http/openai_request.h"

namespace textgen::server::http {

// An error of the shared validation, in the OpenAI API's words: the field it carries
// (server/core/validation.h: "sampling.temperature", "stopping.stop[1]") is looked up in one
// table of OpenAI names ("temperature", "stop[1]"), the message's leading field name is
// replaced by it, and kOpenAiParamPayload is set to the parameter the client sent. Statuses
// without a field, or whose field has no OpenAI name, pass through.
absl::Status ToOpenAiFieldNames(const absl::Status& status, const OpenAiRequest& request);

}  // namespace textgen::server::http
