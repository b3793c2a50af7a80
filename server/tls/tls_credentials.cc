#include "server/tls/tls_credentials.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace textgen::server::tls {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using UniqueBio = std::unique_ptr<BIO, BioFree>;
using UniqueX509 = std::unique_ptr<X509, X509Free>;
using UniqueKey = std::unique_ptr<EVP_PKEY, KeyFree>;

absl::StatusOr<std::string> ReadFile(const std::string& path, absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(flag, " ", path, ": cannot be read"));
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

UniqueBio MemoryBio(const std::string& pem) {
  return UniqueBio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// The certificates of a PEM text, in order; INVALID_ARGUMENT when there is none or one is broken.
absl::StatusOr<std::vector<UniqueX509>> ParseCertificates(const std::string& pem,
                                                          absl::string_view what) {
  std::vector<UniqueX509> certificates;
  UniqueBio bio = MemoryBio(pem);
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certificates.emplace_back(cert);
  }
  // Reading stops with "no start line" at the end of the text; anything else is a broken block.
  const unsigned long error = ERR_peek_last_error();
  const bool clean_end =
      ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE;
  ERR_clear_error();
  if (certificates.empty() || (error != 0 && !clean_end)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not a PEM certificate (expected '-----BEGIN CERTIFICATE-----'",
                     certificates.empty() ? "" : " blocks only", ")"));
  }
  return certificates;
}

}  // namespace

absl::StatusOr<TlsCredentials> LoadTlsCredentials(const TlsFiles& files) {
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key go together: give both (TLS) or neither (plain text)");
  }
  if (!files.client_ca_file.empty() && files.cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-client-ca needs --tls-cert and --tls-key: mutual TLS is TLS first");
  }
  TlsCredentials credentials;
  if (!files.enabled()) return credentials;

  absl::StatusOr<std::string> cert = ReadFile(files.cert_file, "--tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(files.key_file, "--tls-key");
  if (!key.ok()) return key.status();
  absl::StatusOr<std::vector<UniqueX509>> chain =
      ParseCertificates(*cert, absl::StrCat("--tls-cert ", files.cert_file));
  if (!chain.ok()) return chain.status();

  UniqueBio key_bio = MemoryBio(*key);
  UniqueKey private_key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (private_key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-key ", files.key_file,
        ": not an unencrypted PEM private key (expected '-----BEGIN PRIVATE KEY-----')"));
  }
  if (X509_check_private_key(chain->front().get(), private_key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("--tls-key ", files.key_file,
                                                   " does not belong to the first certificate of ",
                                                   files.cert_file));
  }
  credentials.cert_chain_pem = *std::move(cert);
  credentials.private_key_pem = *std::move(key);

  if (!files.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(files.client_ca_file, "--tls-client-ca");
    if (!ca.ok()) return ca.status();
    absl::StatusOr<std::vector<UniqueX509>> authorities =
        ParseCertificates(*ca, absl::StrCat("--tls-client-ca ", files.client_ca_file));
    if (!authorities.ok()) return authorities.status();
    credentials.client_ca_pem = *std::move(ca);
  }
  return credentials;
}

}  // namespace textgen::server::tls
