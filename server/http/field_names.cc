#include "server/http/field_names.h"

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/core/validation.h"
#include "server/http/api_error.h"

namespace textgen::server::http {

absl::Status RenameErrorField(
    const absl::Status& status,
    absl::FunctionRef<std::optional<FieldSpelling>(absl::string_view path)> spell) {
  const std::optional<std::string> field = ErrorField(status);
  if (!field.has_value()) return status;
  // Only the leading name is the field's: "stopping.stop[1] is empty" -> "stop[1] is empty".
  const absl::string_view path = absl::string_view(*field).substr(0, field->find('['));
  const std::optional<FieldSpelling> spelled = spell(path);
  if (!spelled.has_value()) return status;
  std::string message(status.message());
  if (absl::StartsWith(message, path)) {
    message = absl::StrCat(spelled->name, message.substr(path.size()));
  }
  absl::Status out(status.code(), message);
  out.SetPayload(kParamPayload, absl::Cord(spelled->param));
  return out;
}

}  // namespace textgen::server::http
