#include "server/core/model_name.h"

#include "absl/strings/str_cat.h"
#include "server/core/validation.h"

namespace textgen::server {

absl::Status CheckModelName(absl::string_view requested, absl::string_view served) {
  if (requested.empty() || requested == served) return absl::OkStatus();
  // The name is the client's: cut to keep the message readable.
  return WithField(
      absl::NotFoundError(absl::StrCat("the model '", requested.substr(0, 256),
                                       "' does not exist; this server serves '", served, "'")),
      "model");
}

}  // namespace textgen::server
