// End to end: the real textgen-server on the bundled model with mutual TLS on every listener
// (gRPC, the OpenAI HTTP API, /metrics) and no API keys, so client certificates are the
// principals; driven by the real `textgen` CLI and a TLS HTTP client.
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/https_get.h"
#include "tests/testing/server_process.h"
#include "tests/testing/temp_files.h"
#include "tests/testing/test_pki.h"

namespace textgen {
namespace {

using ::testing::HasSubstr;
using textgen::server::testing::HttpsGet;
using textgen::server::testing::HttpsRequest;
using textgen::server::testing::HttpsResult;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The number after `key` in the server's startup line.
int LoggedPort(const std::string& log, const std::string& key) {
  const size_t at = log.find(key);
  return at == std::string::npos ? 0 : std::atoi(log.c_str() + at + key.size());
}

class TlsEndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const test_support::TestPki& pki = test_support::GetTestPki();
    ca_ = test_support::WriteTempFile("e2e-ca.crt", pki.ca_cert);
    alice_cert_ = test_support::WriteTempFile("e2e-alice.crt", pki.alice.cert);
    alice_key_ = test_support::WriteTempFile("e2e-alice.key", pki.alice.key);
    stranger_cert_ = test_support::WriteTempFile("e2e-stranger.crt", pki.stranger.cert);
    stranger_key_ = test_support::WriteTempFile("e2e-stranger.key", pki.stranger.key);
    server_ = new test_support::ServerProcess();
    started_ = server_->Start(
        TEXTGEN_SERVER_BIN,
        {"--model", std::string(TEXTGEN_SOURCE_DIR) + "/models/default.gguf", "--listen",
         "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
         "--threads", "1", "--tls-cert",
         test_support::WriteTempFile("e2e-server.crt", pki.server.cert), "--tls-key",
         test_support::WriteTempFile("e2e-server.key", pki.server.key), "--tls-client-ca", ca_},
        std::chrono::seconds(60));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(started_) << server_->log(); }

  static std::string Cli(const std::string& flags) {
    return absl::StrCat(TEXTGEN_CLI_BIN, " ", flags, " --addr localhost:", server_->port(),
                        " --timeout 60s");
  }
  static std::string AliceFlags() {
    return absl::StrCat("--tls-ca ", ca_, " --tls-cert ", alice_cert_, " --tls-key ", alice_key_);
  }

  static inline test_support::ServerProcess* server_ = nullptr;
  static inline bool started_ = false;
  static inline std::string ca_, alice_cert_, alice_key_, stranger_cert_, stranger_key_;
};

TEST_F(TlsEndToEndTest, StartupLineSaysMutualTls) {
  EXPECT_THAT(server_->log(), HasSubstr(" tls=mutual "));
}

TEST_F(TlsEndToEndTest, CliGeneratesWithAClientCertificateOnly) {
  const CommandResult ok = RunCommand(
      Cli("generate " + AliceFlags() + " --max-tokens 8 --temperature 0 'Once upon a time'"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_FALSE(ok.output.empty());

  const CommandResult no_certificate =
      RunCommand(Cli("generate --tls-ca " + ca_ + " --max-tokens 4 'Once'"));
  EXPECT_EQ(no_certificate.exit_code, 1) << no_certificate.output;
  EXPECT_THAT(no_certificate.output, HasSubstr("UNAVAILABLE"));
  const CommandResult stranger =
      RunCommand(Cli("generate --tls-ca " + ca_ + " --tls-cert " + stranger_cert_ + " --tls-key " +
                     stranger_key_ + " --max-tokens 4 'Once'"));
  EXPECT_EQ(stranger.exit_code, 1) << stranger.output;
  const CommandResult plain = RunCommand(Cli("generate --max-tokens 4 'Once'"));
  EXPECT_EQ(plain.exit_code, 1) << plain.output;
  const CommandResult missing_file = RunCommand(Cli("generate --tls-ca /nonexistent 'Once'"));
  EXPECT_EQ(missing_file.exit_code, 2);
  EXPECT_THAT(missing_file.output, HasSubstr("--tls-ca: cannot read /nonexistent"));
}

TEST_F(TlsEndToEndTest, HttpApiAndMetricsSpeakMutualTlsAndSessionsFollowTheCertificate) {
  const test_support::TestPki& pki = test_support::GetTestPki();
  const int http_port = LoggedPort(server_->log(), "http_port=");
  const int metrics_port = LoggedPort(server_->log(), "metrics_port=");
  ASSERT_GT(http_port, 0);
  ASSERT_GT(metrics_port, 0);

  EXPECT_EQ(HttpsGet(http_port, "/health", pki.ca_cert, &pki.alice).status, 200);
  EXPECT_NE(HttpsGet(http_port, "/health", pki.ca_cert).error, "")
      << "without a client certificate not even health answers over mutual TLS";

  // The same session id from two certificates names two caches: bob's turn reuses nothing of
  // alice's conversation, alice's second turn reuses her first.
  const std::string body =
      R"({"model":"textgen-default-3m","prompt":"Once upon a time there was a little girl","max_tokens":4,)"
      R"("temperature":0,"session_id":"story"})";
  const auto cached_tokens = [&](const test_support::PemPair& who) {
    const HttpsResult result =
        HttpsRequest("POST", http_port, "/v1/completions", body, pki.ca_cert, &who);
    EXPECT_EQ(result.status, 200) << result.error << result.body;
    const nlohmann::json json = nlohmann::json::parse(result.body, nullptr, false);
    const nlohmann::json::json_pointer cached("/usage/prompt_tokens_details/cached_tokens");
    if (!json.is_object() || !json.contains(cached) || !json.at(cached).is_number_integer()) {
      return -1;
    }
    return json.at(cached).get<int>();
  };
  EXPECT_EQ(cached_tokens(pki.alice), 0);
  EXPECT_GT(cached_tokens(pki.alice), 0);
  EXPECT_EQ(cached_tokens(pki.bob), 0);

  const HttpsResult metrics = HttpsGet(metrics_port, "/metrics", pki.ca_cert, &pki.alice);
  EXPECT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, HasSubstr("textgen_requests_total{code=\"OK\"}"));
  EXPECT_THAT(metrics.body, ::testing::Not(HasSubstr("alice"))) << "metrics name no principal";
}

}  // namespace
}  // namespace textgen
