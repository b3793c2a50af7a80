#include "server/core/field_error.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace textgen::server {

absl::Status FieldError(absl::StatusCode code, absl::string_view field, absl::string_view problem) {
  return WithField(absl::Status(code, absl::StrCat(field, " ", problem)), field);
}

absl::Status WithField(absl::Status status, absl::string_view field) {
  if (!status.ok()) status.SetPayload(kFieldPayload, absl::Cord(field));
  return status;
}

std::optional<std::string> ErrorField(const absl::Status& status) {
  const absl::optional<absl::Cord> field = status.GetPayload(kFieldPayload);
  if (!field.has_value()) return std::nullopt;
  return std::string(*field);
}

}  // namespace textgen::server
