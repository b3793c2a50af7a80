#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/core/preparation_pool.h"
#include "server/observability/request_observer.h"
#include "server/scheduler/scheduler_observer.h"
#include "server/tls/tls_credentials.h"

namespace textgen::server {

namespace http {
class HttpServer;
}

struct MetricsOptions {
  // HOST:PORT GET /metrics is served on; empty = no HTTP endpoint (the registry still counts,
  // Render() still works). Port 0 picks a free port.
  std::string listen_address;
  // The endpoint speaks TLS (mutual when these carry client CAs), like the other listeners.
  std::optional<tls::TlsCredentials> tls;
};

// Prometheus metrics of the server (prefix textgen_, base units). Fed by the scheduler
// (SchedulerObserver: engine thread) and by the service (RequestObserver: gRPC threads).
// Thread-safe and non-blocking: every labelled series is created up front, so updates are
// atomic adds (histograms take prometheus-cpp's short internal lock). Request outcomes and
// token counts are recorded once, at the edge (OnRequestDone, every Generate RPC including
// validation rejects), so OnRejected / OnFinished / OnFailed are deliberately not used.
class Metrics final : public SchedulerObserver, public RequestObserver, public PreparationObserver {
 public:
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(const MetricsOptions& options);
  ~Metrics() override;

  // The bound HTTP port (0 when there is no endpoint).
  int port() const;
  // textgen_model_info{name,architecture,dtype} 1.
  void SetModelInfo(const std::string& name, const std::string& architecture,
                    const std::string& dtype);
  // The text exposition format of everything registered (what GET /metrics returns).
  std::string Render() const;

  // RequestObserver: textgen_requests_total{code}, request duration, token counters.
  void OnRequestDone(const RequestRecord& record) override;

  // SchedulerObserver.
  void OnQueued(int queue_depth) override;
  void OnAdmitted(double queue_seconds) override;
  void OnStep(int batch_sequences, int batch_tokens, int prefill_tokens,
              double step_seconds) override;
  void OnFirstToken(double seconds_since_arrival) override;
  void OnToken(double inter_token_seconds) override;
  void OnStateGauges(const SchedulerGauges& gauges) override;
  void OnSessionLookup(bool hit) override;
  void OnSessionEvicted(int count) override;
  void OnDraftVerified(int drafted, int accepted) override;

  // PreparationObserver: textgen_preparation_queued, _wait_seconds, _seconds.
  void OnPreparationQueued(int queued) override;
  void OnPreparationStarted(double wait_seconds) override;
  void OnPreparationDone(double run_seconds) override;

 private:
  Metrics();
  // The families by theme (the constructor calls each once).
  void RegisterRequestMetrics(prometheus::Registry& r);
  void RegisterEngineMetrics(prometheus::Registry& r);
  void RegisterDiskMetrics(prometheus::Registry& r);
  void RegisterSessionMetrics(prometheus::Registry& r);
  void RegisterPreparationMetrics(prometheus::Registry& r);

  std::shared_ptr<prometheus::Registry> registry_;
  // The same HTTP transport as the OpenAI API (one TLS implementation, one set of limits).
  std::unique_ptr<http::HttpServer> endpoint_;

  std::array<prometheus::Counter*, 17> requests_by_code_{};  // index = absl::StatusCode
  prometheus::Histogram* request_duration_;
  prometheus::Histogram* time_to_first_token_;
  prometheus::Histogram* inter_token_latency_;
  prometheus::Histogram* queue_wait_;
  prometheus::Family<prometheus::Counter>* prompt_tokens_;  // by api
  prometheus::Family<prometheus::Counter>* cached_tokens_;  // by api
  prometheus::Counter* generated_tokens_;
  prometheus::Counter* prefill_tokens_;
  prometheus::Histogram* batch_size_;
  prometheus::Histogram* step_seconds_;
  prometheus::Gauge* running_requests_;
  prometheus::Gauge* queued_requests_;
  prometheus::Gauge* kv_bytes_used_;
  prometheus::Gauge* kv_bytes_budget_;
  prometheus::Gauge* kv_bytes_cached_;
  prometheus::Gauge* kv_blocks_shared_;
  prometheus::Counter* kv_blocks_evicted_;
  int64_t kv_blocks_evicted_seen_ = 0;  // the scheduler's cumulative count last published
  // The disk tier (--kv-cache-dir): gauges, and counters fed from its cumulative stats.
  prometheus::Gauge* kv_disk_blocks_;
  prometheus::Gauge* kv_disk_bytes_;
  prometheus::Counter* kv_disk_reads_;
  prometheus::Counter* kv_disk_read_bytes_;
  prometheus::Counter* kv_disk_writes_;
  prometheus::Counter* kv_disk_written_bytes_;
  prometheus::Counter* kv_disk_evicted_;
  prometheus::Counter* kv_disk_rejected_;
  prometheus::Counter* kv_disk_errors_;
  model::KvDiskTierStats kv_disk_seen_;
  prometheus::Gauge* sessions_;
  prometheus::Counter* session_hits_;
  prometheus::Counter* session_misses_;
  prometheus::Counter* session_evictions_;
  // Speculative decoding: tokens drafted, drafted tokens kept, verifying forward rows.
  prometheus::Counter* draft_tokens_;
  prometheus::Counter* draft_accepted_tokens_;
  prometheus::Counter* draft_verifications_;
  prometheus::Gauge* preparation_queued_;
  prometheus::Histogram* preparation_wait_;
  prometheus::Histogram* preparation_seconds_;
  prometheus::Family<prometheus::Gauge>* model_info_;
};

}  // namespace textgen::server
