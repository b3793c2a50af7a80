#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/chat/jinja/value.h"
#include "nlohmann/json.hpp"

namespace textgen::model {

// Parses JSON text into a template value, keeping object key order (as Python's json.loads
// does) and integers as integers. Strings are tainted when `tainted` (untrusted input).
// Errors are INVALID_ARGUMENT naming `what`.
absl::StatusOr<jinja::Value> ParseJsonValue(absl::string_view json, bool tainted,
                                            absl::string_view what);
// The same from JSON already parsed (a caller that read it for its own checks): no second
// parse. Nesting deeper than ParseJsonValue allows is INVALID_ARGUMENT naming `what`.
absl::StatusOr<jinja::Value> JsonToValue(const nlohmann::ordered_json& json, bool tainted,
                                         absl::string_view what);

}  // namespace textgen::model
