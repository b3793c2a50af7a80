#include "server/auth/auth_policy.h"

#include "absl/status/status.h"

namespace textgen::server::auth {

absl::StatusOr<std::string> AuthPolicy::Principal(const Credentials& credentials) const {
  if (authenticator_ != nullptr) return authenticator_->Authenticate(credentials.authorization);
  if (!principal_from_client_certificate_) return std::string();
  // The handshake already refused clients without a valid certificate; this is the name.
  if (credentials.client_certificate_subject.empty()) {
    return absl::UnauthenticatedError("no verified client certificate");
  }
  return std::string(credentials.client_certificate_subject);
}

}  // namespace textgen::server::auth
