#pragma once

#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace textgen::server::http {

// A request field as one API spells it: `name` in messages ("stop"), `param` the parameter the
// client sent (the error body's param: "messages" where the rendered prompt is meant).
struct FieldSpelling {
  std::string name;
  std::string param;
};

// The one mechanism by which every API family speaks of the shared validation's fields in its
// own words. An error carries its field's proto path (server/core/validation.h:
// "sampling.temperature", "stopping.stop[1]"); `spell` maps the path without indices
// ("stopping.stop") to the family's spelling, or nullopt for a field it does not rename. The
// message's leading path is replaced by the name ("stop[1] is empty") and kParamPayload
// (api_error.h) is set to the param. Statuses without a field pass through.
absl::Status RenameErrorField(
    const absl::Status& status,
    absl::FunctionRef<std::optional<FieldSpelling>(absl::string_view path)> spell);

}  // namespace textgen::server::http
