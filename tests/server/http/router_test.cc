// The router alone, with a fake exchange: how a request finds its route and what every refusal
// looks like, reported like any other request. A family the server does not have ("example")
// is added here the way a new API family is added to the route table.
#include "server/http/router.h"

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http/api_error.h"
#include "tests/testing/temp_files.h"

namespace textgen::server::http {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

class FakeExchange final : public HttpExchange {
 public:
  void Respond(HttpResponse response) override { responses.push_back(std::move(response)); }
  void StartStream(int, const std::string&) override {}
  void Write(std::string) override {}
  void EndStream() override {}
  size_t unsent_bytes() const override { return 0; }
  bool closed() const override { return false; }
  void SetOnClose(std::function<void()>) override {}
  void Post(std::function<void()> task) override { task(); }
  std::vector<HttpResponse> responses;
};

class CountingObserver final : public RequestObserver {
 public:
  void OnRequestDone(const RequestRecord& record) override { records.push_back(record); }
  std::vector<RequestRecord> records;
};

// A family with its own error shape, to tell whose shape answered.
ApiFamily ExampleFamily(std::vector<std::string>* served) {
  return ApiFamily{
      .errors =
          [](int http_status, const absl::Status& status) {
            return HttpResponse::Json(
                http_status, absl::StrCat("{\"example_error\":\"", status.message(), "\"}"));
          },
      .routes = {
          {.method = "GET",
           .path = "/api/version",
           .handler =
               [served](const RouteCall& call) {
                 served->push_back(absl::StrCat("version by '", call.principal, "'"));
                 call.exchange->Respond(HttpResponse::Json(200, "{}"));
               }},
          {.method = "POST",
           .path = "/api/show/{id}",
           .handler =
               [served](const RouteCall& call) {
                 served->push_back(absl::StrCat("show ", call.path_argument));
                 call.exchange->Respond(HttpResponse::Json(200, "{}"));
               }},
          {.method = "GET",
           .path = "/api/ping",
           .open = true,
           .handler =
               [served](const RouteCall& call) {
                 served->push_back(call.backend == nullptr ? "ping, loading" : "ping, ready");
                 call.exchange->Respond(HttpResponse::Json(200, "{}"));
               }},
      }};
}

ApiFamily DefaultFamily() {
  return ApiFamily{.errors = &WriteApiError,
                   .routes = {{.method = "POST", .path = "/v1/thing", .handler = {}}}};
}

struct Answer {
  int status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

Answer Call(const HttpRouter& router, const std::string& method, const std::string& path,
            const std::string& authorization = "") {
  HttpRequest request;
  request.method = method;
  request.path = path;
  if (!authorization.empty()) request.headers.emplace_back("authorization", authorization);
  auto exchange = std::make_shared<FakeExchange>();
  router.Handle(request, exchange);
  EXPECT_EQ(exchange->responses.size(), 1u) << method << " " << path;
  if (exchange->responses.empty()) return {};
  const HttpResponse& response = exchange->responses.front();
  return {response.status, response.body, response.headers};
}

TEST(MatchRoutePathTest, ExactPathsAndOneArgument) {
  absl::string_view argument;
  EXPECT_TRUE(MatchRoutePath("/v1/models", "/v1/models", &argument));
  EXPECT_EQ(argument, "");
  EXPECT_FALSE(MatchRoutePath("/v1/models", "/v1/models/x", &argument));
  EXPECT_TRUE(MatchRoutePath("/v1/models/{id}", "/v1/models/org/name", &argument));
  EXPECT_EQ(argument, "org/name");
  EXPECT_FALSE(MatchRoutePath("/v1/models/{id}", "/v1/models/", &argument)) << "an empty id";
  EXPECT_FALSE(MatchRoutePath("/v1/models/{id}", "/v1/model", &argument));
}

class HttpRouterTest : public ::testing::Test {
 protected:
  // The default family, then the example family, with `auth` (none by default).
  std::unique_ptr<HttpRouter> MakeRouter(auth::AuthPolicy auth = {}) {
    auto router = std::make_unique<HttpRouter>(
        HttpRouterOptions{.auth = auth, .observer = &observer_, .logger = nullptr});
    router->Add(DefaultFamily());
    router->Add(ExampleFamily(&served_));
    return router;
  }

  std::vector<std::string> served_;
  CountingObserver observer_;
  const ServiceBackend backend_;
};

TEST_F(HttpRouterTest, ANewFamilyIsServedBesideTheOthers) {
  std::unique_ptr<HttpRouter> router = MakeRouter();
  EXPECT_EQ(Call(*router, "GET", "/api/ping").status, 200) << "open routes answer while loading";
  EXPECT_EQ(Call(*router, "GET", "/api/version").status, 503);
  router->SetBackend(&backend_);
  EXPECT_EQ(Call(*router, "GET", "/api/version").status, 200);
  EXPECT_EQ(Call(*router, "POST", "/api/show/a/b").status, 200);
  EXPECT_EQ(Call(*router, "GET", "/api/ping").status, 200);
  EXPECT_THAT(served_, ElementsAre("ping, loading", "version by ''", "show a/b", "ping, ready"));
  // Only the refusal was reported by the router; served routes report themselves.
  ASSERT_EQ(observer_.records.size(), 1u);
  EXPECT_EQ(observer_.records[0].code, absl::StatusCode::kUnavailable);
}

TEST_F(HttpRouterTest, RefusalsUseTheFamilysShapeAndAreReported) {
  std::unique_ptr<HttpRouter> router = MakeRouter();
  router->SetBackend(&backend_);
  // No route: the first family's shape, listing the whole table.
  Answer answer = Call(*router, "GET", "/nope");
  EXPECT_EQ(answer.status, 404);
  EXPECT_THAT(answer.body, HasSubstr("\"error\""));
  EXPECT_THAT(answer.body, HasSubstr("no route GET /nope; textgen serves POST /v1/thing, GET "
                                     "/api/version, POST /api/show/{id}, GET /api/ping"));
  // A known path with another method: the route's family, and Allow.
  answer = Call(*router, "DELETE", "/api/version");
  EXPECT_EQ(answer.status, 405);
  EXPECT_THAT(answer.body, HasSubstr("example_error"));
  EXPECT_THAT(answer.headers, ElementsAre(Pair("Allow", "GET")));
  ASSERT_EQ(observer_.records.size(), 2u);
  EXPECT_EQ(observer_.records[0].code, absl::StatusCode::kNotFound);
  EXPECT_EQ(observer_.records[1].code, absl::StatusCode::kUnimplemented);
  for (const RequestRecord& record : observer_.records) EXPECT_STREQ(record.api, "http");
  EXPECT_TRUE(served_.empty());
}

TEST_F(HttpRouterTest, TheAuthPolicyGuardsAllButOpenRoutes) {
  const std::string keys = test_support::TestTempPath("router_keys");
  std::ofstream(keys) << "alice key-of-alice-0001\n";
  std::unique_ptr<auth::Authenticator> authenticator = *auth::Authenticator::Create(keys);
  std::unique_ptr<HttpRouter> router = MakeRouter(auth::AuthPolicy(authenticator.get(), false));
  router->SetBackend(&backend_);
  Answer answer = Call(*router, "GET", "/api/version");
  EXPECT_EQ(answer.status, 401);
  EXPECT_THAT(answer.body, HasSubstr("missing API key"));
  EXPECT_THAT(answer.headers, ElementsAre(Pair("WWW-Authenticate", "Bearer")));
  EXPECT_EQ(Call(*router, "GET", "/api/version", "Bearer key-of-alice-0001").status, 200);
  EXPECT_EQ(Call(*router, "GET", "/api/ping").status, 200);
  EXPECT_THAT(served_, ElementsAre("version by 'alice'", "ping, ready"));
  ASSERT_EQ(observer_.records.size(), 1u);
  EXPECT_EQ(observer_.records[0].code, absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace textgen::server::http
