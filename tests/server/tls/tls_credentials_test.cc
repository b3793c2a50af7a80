#include "server/tls/tls_credentials.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_files.h"
#include "tests/testing/test_pki.h"

namespace textgen::server::tls {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using textgen::test_support::GetTestPki;
using textgen::test_support::WriteTempFile;

TlsFiles Files(std::string cert, std::string key, std::string client_ca) {
  TlsFiles files;
  files.cert_file = std::move(cert);
  files.key_file = std::move(key);
  files.client_ca_file = std::move(client_ca);
  return files;
}

TEST(TlsCredentialsTest, LoadsMatchingFiles) {
  const auto& pki = GetTestPki();
  absl::StatusOr<TlsCredentials> loaded = LoadTlsCredentials(
      Files(WriteTempFile("server.crt", pki.server.cert + pki.ca_cert),
            WriteTempFile("server.key", pki.server.key), WriteTempFile("ca.crt", pki.ca_cert)));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->cert_chain_pem, pki.server.cert + pki.ca_cert);
  EXPECT_EQ(loaded->private_key_pem, pki.server.key);
  EXPECT_TRUE(loaded->mutual());
  absl::StatusOr<TlsCredentials> plain = LoadTlsCredentials(TlsFiles());
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->cert_chain_pem.empty());
  EXPECT_FALSE(plain->mutual());
}

TEST(TlsCredentialsTest, EveryMistakeNamesTheFlag) {
  const auto& pki = GetTestPki();
  const std::string cert = WriteTempFile("good.crt", pki.server.cert);
  const std::string key = WriteTempFile("good.key", pki.server.key);
  const std::string other_key = WriteTempFile("alice.key", pki.alice.key);
  const std::string garbage = WriteTempFile("garbage.pem", "not a certificate\n");
  const struct {
    TlsFiles files;
    absl::StatusCode code;
    std::string says;
  } cases[] = {
      {Files(cert, "", ""), absl::StatusCode::kInvalidArgument, "--tls-cert and --tls-key"},
      {Files("", key, ""), absl::StatusCode::kInvalidArgument, "--tls-cert and --tls-key"},
      {Files("", "", cert), absl::StatusCode::kInvalidArgument, "--tls-client-ca needs"},
      {Files("/nonexistent.crt", key, ""), absl::StatusCode::kNotFound,
       "--tls-cert /nonexistent.crt: cannot be read"},
      {Files(cert, "/nonexistent.key", ""), absl::StatusCode::kNotFound,
       "--tls-key /nonexistent.key"},
      {Files(garbage, key, ""), absl::StatusCode::kInvalidArgument, "not a PEM certificate"},
      {Files(cert, garbage, ""), absl::StatusCode::kInvalidArgument,
       "not an unencrypted PEM private key"},
      {Files(cert, other_key, ""), absl::StatusCode::kInvalidArgument,
       "does not belong to the first certificate"},
      {Files(cert, key, garbage), absl::StatusCode::kInvalidArgument, "--tls-client-ca"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<TlsCredentials> loaded = LoadTlsCredentials(c.files);
    ASSERT_FALSE(loaded.ok()) << c.says;
    EXPECT_EQ(loaded.status().code(), c.code) << loaded.status();
    // Key material never appears in a message.
    EXPECT_THAT(std::string(loaded.status().message()),
                AllOf(HasSubstr(c.says), Not(HasSubstr("PRIVATE KEY-----\n"))));
  }
}

}  // namespace
}  // namespace textgen::server::tls
