#include "tests/testing/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>

namespace textgen::test_support {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;

void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what);
}

Key NewKey() {
  Key key(EVP_EC_gen("P-256"));
  Check(key != nullptr, "EVP_EC_gen");
  return key;
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
  Check(extension != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
}

// A certificate for `key` named by `name_entries` ("CN", "alice", "O", ...), signed by
// `issuer_key` as `issuer` (null: self-signed).
Cert MakeCert(EVP_PKEY* key, std::initializer_list<std::pair<const char*, const char*>> name,
              X509* issuer, EVP_PKEY* issuer_key, bool is_ca, const char* alt_names) {
  static long serial = 1;
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  for (const auto& [field, value] : name) {
    X509_NAME_add_entry_by_txt(subject, field, MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(value), -1, -1, 0);
  }
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  X509_set_pubkey(cert.get(), key);
  AddExtension(cert.get(), signer, NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "CA:FALSE");
  AddExtension(cert.get(), signer, NID_key_usage,
               is_ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
  if (alt_names != nullptr) AddExtension(cert.get(), signer, NID_subject_alt_name, alt_names);
  Check(X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) > 0,
        "X509_sign");
  return cert;
}

std::string CertPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, size);
  BIO_free(bio);
  return pem;
}

std::string KeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, size);
  BIO_free(bio);
  return pem;
}

TestPki MakeTestPki() {
  TestPki pki;
  Key ca_key = NewKey();
  Cert ca = MakeCert(ca_key.get(), {{"CN", "textgen test CA"}}, nullptr, nullptr, true, nullptr);
  pki.ca_cert = CertPem(ca.get());
  const auto leaf = [&](std::initializer_list<std::pair<const char*, const char*>> name,
                        const char* alt_names, X509* issuer, EVP_PKEY* issuer_key) {
    Key key = NewKey();
    Cert cert = MakeCert(key.get(), name, issuer, issuer_key, false, alt_names);
    return PemPair{CertPem(cert.get()), KeyPem(key.get())};
  };
  pki.server = leaf({{"CN", "localhost"}}, "DNS:localhost,IP:127.0.0.1", ca.get(), ca_key.get());
  pki.alice = leaf({{"O", "textgen test"}, {"CN", "alice"}}, nullptr, ca.get(), ca_key.get());
  pki.bob = leaf({{"O", "textgen test"}, {"CN", "bob"}}, nullptr, ca.get(), ca_key.get());
  Key other_ca_key = NewKey();
  Cert other_ca =
      MakeCert(other_ca_key.get(), {{"CN", "someone else's CA"}}, nullptr, nullptr, true, nullptr);
  pki.stranger = leaf({{"CN", "mallory"}}, nullptr, other_ca.get(), other_ca_key.get());
  return pki;
}

}  // namespace

const TestPki& GetTestPki() {
  static const TestPki* const pki = new TestPki(MakeTestPki());
  return *pki;
}

}  // namespace textgen::test_support
