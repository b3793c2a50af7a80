#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace textgen::server {

// Upper-case canonical name ("OK", "INVALID_ARGUMENT", ...) for metric labels and logs.
absl::string_view StatusCodeName(absl::StatusCode code);

}  // namespace textgen::server
