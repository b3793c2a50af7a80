#include "server/auth/auth_policy.h"

#include <fstream>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/temp_files.h"

namespace textgen::server::auth {
namespace {

TEST(AuthPolicyTest, WithoutKeysOrCertificatesEveryoneIsAnonymous) {
  const AuthPolicy policy;
  EXPECT_EQ(*policy.Principal({.authorization = "Bearer whatever"}), "");
  EXPECT_FALSE(policy.uses_api_keys());
  EXPECT_FALSE(policy.reads_client_certificate());
}

TEST(AuthPolicyTest, KeysNameThePrincipalAndWinOverCertificates) {
  const std::string path = test_support::TestTempPath("auth_policy_keys");
  std::ofstream(path) << "alice key-of-alice-0001\n";
  std::unique_ptr<Authenticator> keys = *Authenticator::Create(path);
  const AuthPolicy policy(keys.get(), /*principal_from_client_certificate=*/true);
  EXPECT_TRUE(policy.uses_api_keys());
  EXPECT_FALSE(policy.reads_client_certificate()) << "with keys, the certificate names nobody";
  EXPECT_EQ(*policy.Principal({.authorization = "Bearer key-of-alice-0001",
                               .client_certificate_subject = "CN=bob"}),
            "alice");
  const absl::StatusOr<std::string> refused =
      policy.Principal({.client_certificate_subject = "CN=bob"});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated);
}

TEST(AuthPolicyTest, UnderMutualTlsTheCertificateNamesThePrincipal) {
  const AuthPolicy policy(nullptr, /*principal_from_client_certificate=*/true);
  EXPECT_TRUE(policy.reads_client_certificate());
  EXPECT_EQ(*policy.Principal({.client_certificate_subject = "CN=alice,O=Example"}),
            "CN=alice,O=Example");
  EXPECT_EQ(policy.Principal({}).status().code(), absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace textgen::server::auth
