#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace textgen::server::tls {

// Where the server's TLS material comes from (--tls-cert, --tls-key, --tls-client-ca).
struct TlsFiles {
  std::string cert_file;       // PEM certificate chain, leaf first; empty = plain text
  std::string key_file;        // PEM private key of the leaf
  std::string client_ca_file;  // PEM CAs that sign client certificates; set = mutual TLS

  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// The PEM texts every listener (gRPC, HTTP, metrics) is configured with, already checked: the
// certificate and key parse and belong together, the client CAs parse.
struct TlsCredentials {
  std::string cert_chain_pem;
  std::string private_key_pem;
  std::string client_ca_pem;  // empty: clients are not asked for a certificate

  bool mutual() const { return !client_ca_pem.empty(); }
};

// Reads and checks the files, so a wrong file fails at startup with a message naming the flag
// and what is wrong, not at the first handshake. INVALID_ARGUMENT for a missing half (a key
// without a certificate, a client CA without either), NOT_FOUND for an unreadable file,
// INVALID_ARGUMENT for a file that is not PEM of the right kind or a key that does not match
// the certificate. Messages never contain key material.
absl::StatusOr<TlsCredentials> LoadTlsCredentials(const TlsFiles& files);

}  // namespace textgen::server::tls
