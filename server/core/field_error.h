#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace textgen::server {

// A request error about one field carries that field as data: its path in the proto request
// ("sampling.top_p", "stopping.stop[2]", "messages[0].content"), under this payload key. The
// message starts with the same path (FieldError), so a front end that spells fields
// differently (the OpenAI HTTP API: "top_p", "stop[2]") replaces exactly that leading name by
// looking the path up in its own table, never by searching the text. A few errors are about a
// field without starting with it (a chat template refusing "messages", in its own words):
// WithField attaches the field, and the front end renames nothing.
inline constexpr absl::string_view kFieldPayload = "textgen.dev/field";

// `code` with the message "<field> <problem>" and `field` attached.
absl::Status FieldError(absl::StatusCode code, absl::string_view field, absl::string_view problem);

// INVALID_ARGUMENT about `field`.
inline absl::Status InvalidField(absl::string_view field, absl::string_view problem) {
  return FieldError(absl::StatusCode::kInvalidArgument, field, problem);
}

// `status` with `field` attached (for errors whose message already starts with it, such as
// model::CheckUtf8's); OK stays OK.
absl::Status WithField(absl::Status status, absl::string_view field);

// The field a status is about, or nullopt.
std::optional<std::string> ErrorField(const absl::Status& status);

}  // namespace textgen::server
