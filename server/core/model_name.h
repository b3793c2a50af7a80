#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace textgen::server {

// The one check of the model a request names, for every API: OK for the served model's name
// or no name; otherwise NOT_FOUND about the field "model" (ErrorField), saying which model this
// server serves. HTTP answers it as 404 "model_not_found".
absl::Status CheckModelName(absl::string_view requested, absl::string_view served);

}  // namespace textgen::server
