#pragma once

#include "absl/status/status.h"
#include "server/http/openai/openai_request.h"

namespace textgen::server::http {

// An error of the shared validation, in the OpenAI API's words (RenameErrorField, with the
// OpenAI family's own table: "sampling.temperature" -> "temperature", "stopping.stop[1]" ->
// "stop[1]", each of its request shapes a column). Statuses without a field, or whose field
// has no OpenAI name, pass through.
absl::Status ToOpenAiFieldNames(const absl::Status& status, const OpenAiRequest& request);

}  // namespace textgen::server::http
