// TLS and mutual TLS of the HTTP transport (the OpenAI API and /metrics listeners), against a
// real TLS client and certificates made for the test; and the connection cap.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/tls/tls_credentials.h"
#include "server/transport/http_server.h"
#include "tests/testing/http_get.h"
#include "tests/testing/https_get.h"
#include "tests/testing/test_pki.h"

namespace textgen::server::http {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using textgen::test_support::GetTestPki;

HttpResponse ErrorBody(int status, absl::string_view message) {
  return HttpResponse::Json(status, std::string(message));
}

// Answers every request with the client certificate's subject (empty without one).
std::unique_ptr<HttpServer> StartServer(std::optional<tls::TlsCredentials> tls,
                                        int max_connections = 0) {
  HttpServerOptions options;
  options.tls = std::move(tls);
  options.max_connections = max_connections;
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(
      options,
      [](const HttpRequest& request, std::shared_ptr<HttpExchange> exchange) {
        exchange->Respond(HttpResponse::Json(200, "subject=" + request.client_certificate_subject));
      },
      &ErrorBody);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

tls::TlsCredentials ServerCredentials(bool mutual) {
  const auto& pki = GetTestPki();
  return tls::TlsCredentials{.cert_chain_pem = pki.server.cert,
                             .private_key_pem = pki.server.key,
                             .client_ca_pem = mutual ? pki.ca_cert : ""};
}

TEST(HttpTlsTest, ServesHttpsAndNothingInPlainText) {
  std::unique_ptr<HttpServer> server = StartServer(ServerCredentials(/*mutual=*/false));
  ASSERT_NE(server, nullptr);
  const testing::HttpsResult https =
      testing::HttpsGet(server->port(), "/x", GetTestPki().ca_cert, &GetTestPki().alice);
  ASSERT_THAT(https.error, IsEmpty());
  EXPECT_EQ(https.status, 200);
  // Not asked for, so a certificate the client offers anyway names nobody.
  EXPECT_EQ(https.body, "subject=");
  // A plain-text client gets no HTTP from a TLS port.
  EXPECT_THAT(testing::HttpGet(server->port(), "/x"), Not(HasSubstr("HTTP/1.")));
  // Nor does a client that does not trust the server's CA get anywhere.
  EXPECT_THAT(testing::HttpsGet(server->port(), "/x", GetTestPki().stranger.cert).error,
              Not(IsEmpty()));
  server->Stop();
}

TEST(HttpTlsTest, MutualTlsRequiresATrustedClientCertificateAndNamesItsSubject) {
  std::unique_ptr<HttpServer> server = StartServer(ServerCredentials(/*mutual=*/true));
  ASSERT_NE(server, nullptr);
  const auto& pki = GetTestPki();
  const testing::HttpsResult alice =
      testing::HttpsGet(server->port(), "/x", pki.ca_cert, &pki.alice);
  ASSERT_THAT(alice.error, IsEmpty());
  EXPECT_EQ(alice.body, "subject=CN=alice,O=textgen test");
  const testing::HttpsResult bob = testing::HttpsGet(server->port(), "/x", pki.ca_cert, &pki.bob);
  EXPECT_EQ(bob.body, "subject=CN=bob,O=textgen test");

  const testing::HttpsResult anonymous = testing::HttpsGet(server->port(), "/x", pki.ca_cert);
  EXPECT_THAT(anonymous.error, Not(IsEmpty()));
  EXPECT_EQ(anonymous.status, 0);
  const testing::HttpsResult stranger =
      testing::HttpsGet(server->port(), "/x", pki.ca_cert, &pki.stranger);
  EXPECT_THAT(stranger.error, Not(IsEmpty()));
  EXPECT_EQ(stranger.status, 0);
  server->Stop();
}

TEST(HttpTlsTest, ConnectionsBeyondTheCapAreClosedAtOnce) {
  std::unique_ptr<HttpServer> server = StartServer(std::nullopt, /*max_connections=*/1);
  ASSERT_NE(server, nullptr);
  // One connection held open (connected, mid-request), so the server counts it.
  const int held = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(server->port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(held, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_GT(send(held, "GET /a HTTP/1.1\r\n", 17, 0), 0);
  absl::SleepFor(absl::Milliseconds(200));  // accepted and registered
  EXPECT_EQ(testing::HttpGet(server->port(), "/x"), "") << "a second connection is refused";
  close(held);
  std::string response;
  for (int attempt = 0; attempt < 100 && response.empty(); ++attempt) {
    absl::SleepFor(absl::Milliseconds(20));  // the server notices the close
    response = testing::HttpGet(server->port(), "/x");
  }
  EXPECT_THAT(response, HasSubstr("200 OK")) << "the place is free again";
  server->Stop();
}

}  // namespace
}  // namespace textgen::server::http
