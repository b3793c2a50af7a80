#include "server/observability/metrics.h"

#include <exception>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"
#include "server/transport/http_server.h"

namespace textgen::server {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// Exponential bucket bounds start, start*factor, ... (count of them).
Histogram::BucketBoundaries Exponential(double start, double factor, int count) {
  Histogram::BucketBoundaries bounds;
  for (double b = start; count-- > 0; b *= factor) bounds.push_back(b);
  return bounds;
}

prometheus::Gauge* PlainGauge(prometheus::Registry& r, const char* name, const char* help) {
  return &BuildGauge().Name(name).Help(help).Register(r).Add({});
}

prometheus::Counter* PlainCounter(prometheus::Registry& r, const char* name, const char* help) {
  return &BuildCounter().Name(name).Help(help).Register(r).Add({});
}

}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  prometheus::Registry& r = *registry_;
  RegisterRequestMetrics(r);
  RegisterEngineMetrics(r);
  RegisterDiskMetrics(r);
  RegisterSessionMetrics(r);
  RegisterPreparationMetrics(r);
}

// Requests by outcome, their latencies and their tokens.
void Metrics::RegisterRequestMetrics(prometheus::Registry& r) {
  auto& requests = BuildCounter()
                       .Name("textgen_requests_total")
                       .Help(
                           "Requests by final status code: gRPC Generate/Chat/Embed, the HTTP API "
                           "routes, and the requests they refused before any work")
                       .Register(r);
  for (int code = 0; code < static_cast<int>(requests_by_code_.size()); ++code) {
    requests_by_code_[code] =
        &requests.Add({{"code", absl::StatusCodeToString(static_cast<absl::StatusCode>(code))}});
  }
  request_duration_ = &BuildHistogram()
                           .Name("textgen_request_duration_seconds")
                           .Help("Generate request duration, arrival to last message")
                           .Register(r)
                           .Add({}, Exponential(0.005, 2, 17));  // 5 ms .. ~330 s
  time_to_first_token_ = &BuildHistogram()
                              .Name("textgen_time_to_first_token_seconds")
                              .Help("Arrival to first generated token")
                              .Register(r)
                              .Add({}, Exponential(0.001, 2, 16));  // 1 ms .. ~33 s
  inter_token_latency_ = &BuildHistogram()
                              .Name("textgen_inter_token_latency_seconds")
                              .Help("Time between consecutive tokens of one request")
                              .Register(r)
                              .Add({}, Exponential(0.0005, 2, 14));  // 0.5 ms .. ~4 s
  queue_wait_ = &BuildHistogram()
                     .Name("textgen_queue_wait_seconds")
                     .Help("Arrival to admission into the running batch")
                     .Register(r)
                     .Add({}, Exponential(0.0005, 2, 18));  // 0.5 ms .. ~65 s
  prompt_tokens_ = &BuildCounter()
                        .Name("textgen_prompt_tokens_total")
                        .Help("Prompt tokens of generation requests, by API (grpc, http)")
                        .Register(r);
  cached_tokens_ = &BuildCounter()
                        .Name("textgen_cached_tokens_total")
                        .Help(
                            "Prompt tokens whose K/V came from the prefix cache or a session "
                            "instead of being computed, by API (grpc, http)")
                        .Register(r);
  generated_tokens_ = &BuildCounter()
                           .Name("textgen_generated_tokens_total")
                           .Help("Tokens generated (sent to clients)")
                           .Register(r)
                           .Add({});
  prefill_tokens_ = &BuildCounter()
                         .Name("textgen_prefill_tokens_total")
                         .Help("Prompt tokens computed by the engine (not served from a cache)")
                         .Register(r)
                         .Add({});
  // Every front end's series exists from the start (at 0), so rates have data at once.
  for (const char* api : {"grpc", "http"}) {
    prompt_tokens_->Add({{"api", api}});
    cached_tokens_->Add({{"api", api}});
  }
}

// The engine's steps, the batch and the KV cache in memory.
void Metrics::RegisterEngineMetrics(prometheus::Registry& r) {
  batch_size_ = &BuildHistogram()
                     .Name("textgen_batch_size")
                     .Help("Sequences per engine step")
                     .Register(r)
                     .Add({}, Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128, 256});
  step_seconds_ = &BuildHistogram()
                       .Name("textgen_step_seconds")
                       .Help("Duration of one engine step (batched forward pass + sampling)")
                       .Register(r)
                       .Add({}, Exponential(0.0001, 2, 17));  // 0.1 ms .. ~6.5 s
  running_requests_ = &BuildGauge()
                           .Name("textgen_running_requests")
                           .Help("Requests in the running batch")
                           .Register(r)
                           .Add({});
  queued_requests_ = &BuildGauge()
                          .Name("textgen_queued_requests")
                          .Help("Requests waiting for admission")
                          .Register(r)
                          .Add({});
  kv_bytes_used_ = &BuildGauge()
                        .Name("textgen_kv_cache_bytes_used")
                        .Help("KV cache bytes held by sequences and sessions")
                        .Register(r)
                        .Add({});
  kv_bytes_budget_ = &BuildGauge()
                          .Name("textgen_kv_cache_bytes_budget")
                          .Help("KV cache byte budget")
                          .Register(r)
                          .Add({});
  kv_bytes_cached_ = &BuildGauge()
                          .Name("textgen_kv_cache_bytes_cached")
                          .Help(
                              "KV cache bytes of cached prefixes no request or session holds "
                              "(reclaimed on demand)")
                          .Register(r)
                          .Add({});
  kv_blocks_shared_ = &BuildGauge()
                           .Name("textgen_kv_cache_blocks_shared")
                           .Help("KV blocks (16 tokens) held by more than one request or session")
                           .Register(r)
                           .Add({});
  kv_blocks_evicted_ = &BuildCounter()
                            .Name("textgen_kv_cache_evicted_blocks_total")
                            .Help("Cached prefix blocks reclaimed for new K/V")
                            .Register(r)
                            .Add({});
}

// The KV cache's disk tier (--kv-cache-dir).
void Metrics::RegisterDiskMetrics(prometheus::Registry& r) {
  kv_disk_blocks_ =
      PlainGauge(r, "textgen_kv_disk_blocks",
                 "KV blocks in the --kv-cache-dir directory (this model and KV type)");
  kv_disk_bytes_ = PlainGauge(r, "textgen_kv_disk_bytes", "Bytes of those block files");
  kv_disk_reads_ = PlainCounter(r, "textgen_kv_disk_reads_total",
                                "KV blocks read back from disk for a prefix hit");
  kv_disk_read_bytes_ =
      PlainCounter(r, "textgen_kv_disk_read_bytes_total", "Bytes of KV blocks read");
  kv_disk_writes_ = PlainCounter(r, "textgen_kv_disk_writes_total",
                                 "KV blocks written to disk (evicted from memory, or on drain)");
  kv_disk_written_bytes_ =
      PlainCounter(r, "textgen_kv_disk_written_bytes_total", "Bytes of KV blocks written");
  kv_disk_evicted_ = PlainCounter(r, "textgen_kv_disk_evicted_blocks_total",
                                  "KV block files removed for the directory's size limit");
  kv_disk_rejected_ =
      PlainCounter(r, "textgen_kv_disk_rejected_files_total",
                   "KV block files refused (torn, truncated, corrupted or of another model)");
  kv_disk_errors_ = PlainCounter(r, "textgen_kv_disk_errors_total",
                                 "KV block reads or writes the file system failed");
}

// Sessions and speculative decoding.
void Metrics::RegisterSessionMetrics(prometheus::Registry& r) {
  sessions_ = &BuildGauge().Name("textgen_sessions").Help("Sessions kept").Register(r).Add({});
  auto& lookups = BuildCounter()
                      .Name("textgen_session_lookups_total")
                      .Help("Session lookups by requests naming a session_id")
                      .Register(r);
  session_hits_ = &lookups.Add({{"result", "hit"}});
  session_misses_ = &lookups.Add({{"result", "miss"}});
  session_evictions_ = &BuildCounter()
                            .Name("textgen_session_evictions_total")
                            .Help("Sessions evicted (TTL or memory pressure)")
                            .Register(r)
                            .Add({});
  draft_tokens_ = PlainCounter(r, "textgen_speculative_draft_tokens_total",
                               "Tokens drafted for speculative decoding and verified");
  draft_accepted_tokens_ = PlainCounter(
      r, "textgen_speculative_accepted_tokens_total",
      "Drafted tokens kept (equal to what the model sampled); / draft tokens = acceptance");
  draft_verifications_ = PlainCounter(
      r, "textgen_speculative_verifications_total",
      "Speculative decode steps of one sequence; (accepted + this) / this = tokens per step");
}

// The preparation pool and the served model.
void Metrics::RegisterPreparationMetrics(prometheus::Registry& r) {
  preparation_queued_ = &BuildGauge()
                             .Name("textgen_preparation_queued")
                             .Help("Requests waiting to be parsed, rendered and tokenized")
                             .Register(r)
                             .Add({});
  preparation_wait_ = &BuildHistogram()
                           .Name("textgen_preparation_wait_seconds")
                           .Help("Arrival to the start of a request's preparation")
                           .Register(r)
                           .Add({}, Exponential(0.0001, 2, 16));  // 0.1 ms .. ~3 s
  preparation_seconds_ = &BuildHistogram()
                              .Name("textgen_preparation_seconds")
                              .Help("Parsing, rendering and tokenizing one request")
                              .Register(r)
                              .Add({}, Exponential(0.0001, 2, 16));  // 0.1 ms .. ~3 s
  model_info_ = &BuildGauge()
                     .Name("textgen_model_info")
                     .Help("The served model (value is always 1)")
                     .Register(r);
}

void Metrics::OnPreparationQueued(int queued) { preparation_queued_->Set(queued); }

void Metrics::OnPreparationStarted(double wait_seconds) {
  preparation_wait_->Observe(wait_seconds);
}

void Metrics::OnPreparationDone(double run_seconds) { preparation_seconds_->Observe(run_seconds); }

// The endpoint first: its handler reads the registry.
Metrics::~Metrics() {
  if (endpoint_ != nullptr) endpoint_->Stop();
}

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Create(const MetricsOptions& options) {
  std::unique_ptr<Metrics> metrics(new Metrics());
  if (options.listen_address.empty()) return metrics;
  http::HttpServerOptions endpoint_options;
  endpoint_options.listen = options.listen_address;
  endpoint_options.threads = 1;
  endpoint_options.max_body_bytes = 0;  // scrapes have no body
  endpoint_options.max_connections = 64;
  endpoint_options.tls = options.tls;
  const Metrics* serving = metrics.get();
  absl::StatusOr<std::unique_ptr<http::HttpServer>> endpoint = http::HttpServer::Start(
      endpoint_options,
      [serving](const http::HttpRequest& request, std::shared_ptr<http::HttpExchange> exchange) {
        http::HttpResponse response;
        response.content_type = "text/plain; charset=utf-8";
        if (request.path != "/metrics") {
          response.status = 404;
          response.body = "not found: metrics are at /metrics\n";
        } else if (request.method != "GET") {
          response.status = 405;
          response.headers.emplace_back("Allow", "GET");
          response.body = "method not allowed: use GET\n";
        } else {
          response.content_type = "text/plain; version=0.0.4; charset=utf-8";
          response.body = serving->Render();
        }
        exchange->Respond(std::move(response));
      },
      [](int status, absl::string_view message) {
        http::HttpResponse response;
        response.status = status;
        response.content_type = "text/plain; charset=utf-8";
        response.body = absl::StrCat(message, "\n");
        return response;
      });
  if (!endpoint.ok()) {
    return absl::Status(endpoint.status().code(),
                        absl::StrCat("--metrics-listen ", options.listen_address, ": ",
                                     endpoint.status().message()));
  }
  metrics->endpoint_ = *std::move(endpoint);
  return metrics;
}

int Metrics::port() const { return endpoint_ == nullptr ? 0 : endpoint_->port(); }

void Metrics::SetModelInfo(const std::string& name, const std::string& architecture,
                           const std::string& dtype) {
  model_info_->Add({{"name", name}, {"architecture", architecture}, {"dtype", dtype}}).Set(1);
}

std::string Metrics::Render() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

void Metrics::OnRequestDone(const RequestRecord& record) {
  const int code = static_cast<int>(record.code);
  const bool known = code >= 0 && code < static_cast<int>(requests_by_code_.size());
  requests_by_code_[known ? code : static_cast<int>(absl::StatusCode::kUnknown)]->Increment();
  request_duration_->Observe(record.duration_seconds);
  const std::string api = record.api == nullptr || record.api[0] == '\0' ? "unknown" : record.api;
  prompt_tokens_->Add({{"api", api}}).Increment(record.prompt_tokens);
  cached_tokens_->Add({{"api", api}}).Increment(record.cached_tokens);
  generated_tokens_->Increment(record.completion_tokens);
}

void Metrics::OnQueued(int queue_depth) { queued_requests_->Set(queue_depth); }

void Metrics::OnAdmitted(double queue_seconds) { queue_wait_->Observe(queue_seconds); }

void Metrics::OnStep(int batch_sequences, int batch_tokens, int prefill_tokens,
                     double step_seconds) {
  batch_size_->Observe(batch_sequences);
  step_seconds_->Observe(step_seconds);
  prefill_tokens_->Increment(prefill_tokens);
}

void Metrics::OnFirstToken(double seconds_since_arrival) {
  time_to_first_token_->Observe(seconds_since_arrival);
}

void Metrics::OnToken(double inter_token_seconds) {
  inter_token_latency_->Observe(inter_token_seconds);
}

void Metrics::OnStateGauges(const SchedulerGauges& g) {
  running_requests_->Set(g.running);
  queued_requests_->Set(g.queued);
  kv_bytes_used_->Set(static_cast<double>(g.kv_bytes_used));
  kv_bytes_budget_->Set(static_cast<double>(g.kv_bytes_budget));
  kv_bytes_cached_->Set(static_cast<double>(g.kv_bytes_cached));
  kv_blocks_shared_->Set(g.kv_blocks_shared);
  if (g.kv_blocks_evicted > kv_blocks_evicted_seen_) {
    kv_blocks_evicted_->Increment(
        static_cast<double>(g.kv_blocks_evicted - kv_blocks_evicted_seen_));
    kv_blocks_evicted_seen_ = g.kv_blocks_evicted;
  }
  if (g.kv_disk != nullptr) {
    const model::KvDiskTierStats& d = *g.kv_disk;
    kv_disk_blocks_->Set(static_cast<double>(d.files));
    kv_disk_bytes_->Set(static_cast<double>(d.bytes));
    auto advance = [](prometheus::Counter* counter, int64_t now, int64_t& seen) {
      if (now > seen) counter->Increment(static_cast<double>(now - seen));
      seen = now;
    };
    model::KvDiskTierStats& seen = kv_disk_seen_;
    advance(kv_disk_reads_, d.reads, seen.reads);
    advance(kv_disk_read_bytes_, d.read_bytes, seen.read_bytes);
    advance(kv_disk_writes_, d.writes, seen.writes);
    advance(kv_disk_written_bytes_, d.written_bytes, seen.written_bytes);
    advance(kv_disk_evicted_, d.evicted, seen.evicted);
    advance(kv_disk_rejected_, d.rejected, seen.rejected);
    advance(kv_disk_errors_, d.errors, seen.errors);
  }
  sessions_->Set(g.sessions);
}

void Metrics::OnSessionLookup(bool hit) { (hit ? session_hits_ : session_misses_)->Increment(); }

void Metrics::OnSessionEvicted(int count) { session_evictions_->Increment(count); }

void Metrics::OnDraftVerified(int drafted, int accepted) {
  draft_tokens_->Increment(drafted);
  draft_accepted_tokens_->Increment(accepted);
  draft_verifications_->Increment();
}

}  // namespace textgen::server
