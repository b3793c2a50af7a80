#pragma once

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace textgen::server {

// A session's KV cache lives in one replica's memory, so a load balancer must send every turn
// of a session to the same replica. It cannot read session_id inside the request body, so
// clients repeat it in this header (gRPC metadata or HTTP header), and the balancer hashes on
// it (deploy/nginx/textgen-lb.conf).
inline constexpr absl::string_view kSessionRoutingHeader = "x-session-id";

// A request whose header names another session than its session_id field would be routed by
// one and cached under the other: refused with INVALID_ARGUMENT. `header_values` holds every
// value the header was sent with (none: nothing to check; the header is optional).
absl::Status CheckSessionRoutingHeader(const std::vector<absl::string_view>& header_values,
                                       absl::string_view session_id);

}  // namespace textgen::server
