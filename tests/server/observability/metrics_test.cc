#include "server/observability/metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/http_get.h"
#include "tests/testing/https_get.h"
#include "tests/testing/test_pki.h"

namespace textgen::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, ServesEveryMetricOverHttp) {
  absl::StatusOr<std::unique_ptr<Metrics>> created =
      Metrics::Create(MetricsOptions{.listen_address = "127.0.0.1:0", .tls = std::nullopt});
  ASSERT_TRUE(created.ok()) << created.status();
  Metrics& m = **created;
  ASSERT_GT(m.port(), 0);

  m.SetModelInfo("stories", "llama", "f32");
  m.OnQueued(3);
  m.OnAdmitted(0.25);
  m.OnStep(/*batch_sequences=*/4, /*batch_tokens=*/40, /*prefill_tokens=*/36,
           /*step_seconds=*/0.002);
  m.OnFirstToken(0.05);
  m.OnToken(0.01);
  m.OnToken(0.02);
  auto gauges = [](int64_t evicted_so_far) {
    return SchedulerGauges{.running = 4,
                           .queued = 1,
                           .sessions = 2,
                           .kv_bytes_used = 1 << 20,
                           .kv_bytes_cached = 3 << 20,
                           .kv_bytes_budget = 1 << 30,
                           .kv_blocks_shared = 6,
                           .kv_blocks_evicted = evicted_so_far};
  };
  m.OnStateGauges(gauges(9));
  m.OnStateGauges(gauges(11));  // cumulative: the counter ends at 11, not 20
  m.OnSessionLookup(true);
  m.OnSessionLookup(false);
  m.OnSessionLookup(false);
  m.OnSessionEvicted(2);
  RequestRecord ok;
  ok.code = absl::StatusCode::kOk;
  ok.duration_seconds = 1.5;
  ok.prompt_tokens = 5;
  ok.cached_tokens = 2;
  ok.completion_tokens = 7;
  m.OnRequestDone(ok);
  RequestRecord over_http = ok;
  over_http.api = "http";
  over_http.prompt_tokens = 100;
  over_http.cached_tokens = 96;
  m.OnRequestDone(over_http);
  RequestRecord rejected;
  rejected.code = absl::StatusCode::kInvalidArgument;
  m.OnRequestDone(rejected);

  const std::string page = testing::HttpGet(m.port(), "/metrics");
  EXPECT_THAT(page, HasSubstr(" 200 OK"));
  for (const char* line : {
           "textgen_requests_total{code=\"OK\"} 2",
           "textgen_requests_total{code=\"INVALID_ARGUMENT\"} 1",
           "textgen_requests_total{code=\"RESOURCE_EXHAUSTED\"} 0",
           "textgen_request_duration_seconds_count 3",
           "textgen_request_duration_seconds_sum 3",
           "textgen_time_to_first_token_seconds_count 1",
           "textgen_inter_token_latency_seconds_count 2",
           "textgen_queue_wait_seconds_sum 0.25",
           "textgen_prompt_tokens_total{api=\"grpc\"} 5",
           "textgen_cached_tokens_total{api=\"grpc\"} 2",
           "textgen_prompt_tokens_total{api=\"http\"} 100",
           "textgen_cached_tokens_total{api=\"http\"} 96",
           "textgen_generated_tokens_total 14",
           "textgen_batch_size_sum 4",
           "textgen_batch_size_bucket{le=\"4\"} 1",
           "textgen_step_seconds_count 1",
           "textgen_running_requests 4",
           "textgen_queued_requests 1",
           "textgen_kv_cache_bytes_used 1048576",
           "textgen_kv_cache_bytes_budget 1073741824",
           "textgen_kv_cache_bytes_cached 3145728",
           "textgen_kv_cache_blocks_shared 6",
           "textgen_kv_cache_evicted_blocks_total 11",
           "textgen_sessions 2",
           "textgen_session_lookups_total{result=\"hit\"} 1",
           "textgen_session_lookups_total{result=\"miss\"} 2",
           "textgen_session_evictions_total 2",
           "textgen_model_info{architecture=\"llama\",dtype=\"f32\",name=\"stories\"} 1",
       }) {
    EXPECT_THAT(page, HasSubstr(line));
  }
  EXPECT_THAT(page, HasSubstr("Content-Type: text/plain; version=0.0.4"));
  EXPECT_THAT(page, HasSubstr(m.Render()));
}

TEST(MetricsTest, NoEndpointWithoutAddress) {
  absl::StatusOr<std::unique_ptr<Metrics>> m = Metrics::Create(MetricsOptions{});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->port(), 0);
  EXPECT_THAT((*m)->Render(), HasSubstr("textgen_requests_total{code=\"OK\"} 0"));
}

TEST(MetricsTest, PortInUseIsAnError) {
  absl::StatusOr<std::unique_ptr<Metrics>> first =
      Metrics::Create(MetricsOptions{.listen_address = "127.0.0.1:0", .tls = std::nullopt});
  ASSERT_TRUE(first.ok());
  const std::string address = "127.0.0.1:" + std::to_string((*first)->port());
  absl::StatusOr<std::unique_ptr<Metrics>> second =
      Metrics::Create(MetricsOptions{.listen_address = address, .tls = std::nullopt});
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(std::string(second.status().message()), HasSubstr(address));
}

TEST(MetricsTest, ServesOverMutualTlsLikeTheOtherListeners) {
  const textgen::test_support::TestPki& pki = textgen::test_support::GetTestPki();
  absl::StatusOr<std::unique_ptr<Metrics>> m =
      Metrics::Create(MetricsOptions{.listen_address = "127.0.0.1:0",
                                     .tls = tls::TlsCredentials{.cert_chain_pem = pki.server.cert,
                                                                .private_key_pem = pki.server.key,
                                                                .client_ca_pem = pki.ca_cert}});
  ASSERT_TRUE(m.ok()) << m.status();
  const testing::HttpsResult scrape =
      testing::HttpsGet((*m)->port(), "/metrics", pki.ca_cert, &pki.alice);
  ASSERT_EQ(scrape.error, "");
  EXPECT_EQ(scrape.status, 200);
  EXPECT_EQ(scrape.body, (*m)->Render());
  EXPECT_NE(testing::HttpsGet((*m)->port(), "/metrics", pki.ca_cert).error, "")
      << "a scraper without a client certificate is refused";
  EXPECT_THAT(testing::HttpGet((*m)->port(), "/metrics"), Not(HasSubstr("textgen_")));
  EXPECT_EQ(testing::HttpsGet((*m)->port(), "/other", pki.ca_cert, &pki.alice).status, 404);
}

}  // namespace
}  // namespace textgen::server
