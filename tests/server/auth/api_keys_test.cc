#include "server/auth/api_keys.h"

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_files.h"

namespace textgen::server::auth {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ApiKeysTest, ParsesPrincipalsAndFindsKeys) {
  absl::StatusOr<ApiKeys> keys = ApiKeys::Parse(
      "# comment\n\nalice  key-of-alice-0001\n  bob\tkey-of-bob-00000002  \nalice "
      "second-key-of-alice\n",
      "keys");
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->size(), 3u);
  EXPECT_EQ(keys->Find("key-of-alice-0001"), "alice");
  EXPECT_EQ(keys->Find("second-key-of-alice"), "alice");  // rotation: two keys, one principal
  EXPECT_EQ(keys->Find("key-of-bob-00000002"), "bob");
  EXPECT_EQ(keys->Find("key-of-bob-0000000"), std::nullopt);
  EXPECT_EQ(keys->Find(""), std::nullopt);
}

TEST(ApiKeysTest, ErrorsNameTheLineAndNeverTheKey) {
  struct Bad {
    const char* text;
    const char* message;
  };
  for (const Bad& bad : {
           Bad{"alice\n", "keys line 1: expected 'PRINCIPAL KEY', got 1 fields"},
           Bad{"a b c\n", "keys line 1: expected 'PRINCIPAL KEY', got 3 fields"},
           Bad{"\nal/ice key-0123456789abcdef\n", "keys line 2: principal must be 1..64"},
           Bad{"alice short-key\n", "the key of 'alice' is 9 characters; at least 16"},
           Bad{"alice key-0123456789abcdef\nbob key-0123456789abcdef\n",
               "keys line 2: this key is already given to 'alice'"},
           Bad{"# nothing\n", "keys: no keys"},
       }) {
    absl::StatusOr<ApiKeys> keys = ApiKeys::Parse(bad.text, "keys");
    ASSERT_FALSE(keys.ok()) << bad.text;
    EXPECT_EQ(keys.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(keys.status().message()), HasSubstr(bad.message));
    EXPECT_THAT(std::string(keys.status().message()), Not(HasSubstr("0123456789")));
  }
}

TEST(AuthenticatorTest, BearerHeaderAndReload) {
  const std::string path = test_support::TestTempPath("api_keys");
  std::ofstream(path) << "alice key-of-alice-0001\n";
  absl::StatusOr<std::unique_ptr<Authenticator>> auth = Authenticator::Create(path);
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_EQ((*auth)->Authenticate("Bearer key-of-alice-0001").value_or(""), "alice");
  EXPECT_EQ((*auth)->Authenticate("bearer key-of-alice-0001 ").value_or(""), "alice");
  for (const char* header : {"", "key-of-alice-0001", "Basic a2V5", "Bearer nope-nope-nope-nope"}) {
    absl::StatusOr<std::string> principal = (*auth)->Authenticate(header);
    ASSERT_FALSE(principal.ok()) << header;
    EXPECT_EQ(principal.status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_THAT(std::string(principal.status().message()), Not(HasSubstr("nope")));
  }

  // A reload swaps the keys; a broken file keeps the old ones.
  std::ofstream(path) << "bob key-of-bob-00000002\n";
  ASSERT_TRUE((*auth)->Reload().ok());
  EXPECT_FALSE((*auth)->Authenticate("Bearer key-of-alice-0001").ok());
  EXPECT_EQ((*auth)->Authenticate("Bearer key-of-bob-00000002").value_or(""), "bob");
  std::ofstream(path) << "bob short\n";
  EXPECT_FALSE((*auth)->Reload().ok());
  EXPECT_EQ((*auth)->Authenticate("Bearer key-of-bob-00000002").value_or(""), "bob");
  EXPECT_EQ(Authenticator::Create(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace textgen::server::auth
