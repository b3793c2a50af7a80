#include "server/core/session_routing.h"

#include "absl/strings/str_cat.h"

namespace textgen::server {

absl::Status CheckSessionRoutingHeader(const std::vector<absl::string_view>& header_values,
                                       absl::string_view session_id) {
  if (header_values.empty()) return absl::OkStatus();
  if (header_values.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", kSessionRoutingHeader, " header was sent ", header_values.size(),
                     " times; send it once, with the request's session_id"));
  }
  const absl::string_view header = header_values.front();
  if (header == session_id) return absl::OkStatus();
  // Neither value is echoed: the header is unvalidated client input.
  if (session_id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", kSessionRoutingHeader, " header names a session (", header.size(),
                     " bytes) but the request has no session_id; set session_id "
                     "to the same id, or drop the header"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "the ", kSessionRoutingHeader, " header (", header.size(),
      " bytes) differs from session_id (", session_id.size(),
      " bytes); send the same id in both: load balancers route a session's turns by the header"));
}

}  // namespace textgen::server
