#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/auth/api_keys.h"

namespace textgen::server::auth {

// What a front end read off one request to say who sends it.
struct Credentials {
  // The "authorization" header or metadata ("Bearer KEY"); empty when absent.
  absl::string_view authorization = {};
  // The verified client certificate's subject; empty without one. Read only when
  // AuthPolicy::reads_client_certificate().
  absl::string_view client_certificate_subject = {};
};

// Who a request is from: the one rule every front end (gRPC, each HTTP API family) applies.
// With API keys, the key names the principal; without them, under mutual TLS, the client
// certificate's subject does; otherwise every caller is the anonymous principal "". Sessions,
// stored responses and per-principal limits follow the principal. Thread-safe.
class AuthPolicy {
 public:
  AuthPolicy() = default;  // no authentication
  // `authenticator` (may be null) must outlive the policy.
  AuthPolicy(const Authenticator* authenticator, bool principal_from_client_certificate)
      : authenticator_(authenticator),
        principal_from_client_certificate_(authenticator == nullptr &&
                                           principal_from_client_certificate) {}

  // The principal, or UNAUTHENTICATED saying what is missing or wrong (never echoing a key).
  absl::StatusOr<std::string> Principal(const Credentials& credentials) const;
  // Whether a refusal should invite the client to send a bearer key (WWW-Authenticate).
  bool uses_api_keys() const { return authenticator_ != nullptr; }
  bool reads_client_certificate() const { return principal_from_client_certificate_; }

 private:
  const Authenticator* authenticator_ = nullptr;
  bool principal_from_client_certificate_ = false;
};

}  // namespace textgen::server::auth
