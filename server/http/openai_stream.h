#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/core/event_outbox.h"
#include "server/http/openai_response.h"
#include "server/observability/logging.h"
#include "server/observability/request_observer.h"
#include "server/scheduler/stream_sink.h"
#include "server/transport/http_server.h"

namespace textgen::server::http {

struct OpenAiStreamOptions {
  bool stream = false;  // server-sent events, or one JSON body at the end
  OpenAiResponseWriter::Options writer;
  // Events buffered for a client that is not reading; beyond this the request is dropped
  // (as on gRPC). Also: bytes the socket has not taken.
  size_t max_buffered_events = kDefaultMaxBufferedEvents;
  size_t max_unsent_bytes = 8 << 20;
  RequestObserver* observer = nullptr;  // may be null
  Logger* logger = nullptr;             // may be null
};

// One OpenAI request between the engine thread (Push) and its HTTP exchange: events are queued
// under a lock and turned into JSON on the exchange's executor. A client that disconnects is
// seen at once (HttpExchange::SetOnClose) and IsClosed() tells the scheduler to free its slot
// at the next step. Reports the outcome (metrics, log line) exactly once.
class OpenAiStream final : public StreamSink, public std::enable_shared_from_this<OpenAiStream> {
 public:
  OpenAiStream(std::shared_ptr<HttpExchange> exchange, const OpenAiStreamOptions& options,
               const model::Tokenizer* tokenizer, RequestRecord record, absl::Time arrival);

  // On the exchange's executor, once the scheduler accepted the request: watches for the
  // client going away and, for a stream, sends the headers and the first chunk.
  void Begin();

  // StreamSink (engine thread).
  bool Push(StreamEvent event) override;
  bool IsClosed() const override;

 private:
  void Flush();  // executor
  void Complete(const absl::Status& status, const std::optional<Usage>& usage);
  void FailResponse(const absl::Status& status);

  const std::shared_ptr<HttpExchange> exchange_;
  const OpenAiStreamOptions options_;
  const absl::Time arrival_;
  OpenAiResponseWriter writer_;  // executor only

  mutable std::mutex mu_;
  EventOutbox outbox_ ABSL_GUARDED_BY(mu_);
  bool flush_posted_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> closed_{false};  // the client went away or the response ended

  // Executor only.
  bool done_ = false;  // the outcome was reported
  RequestRecord record_;
};

}  // namespace textgen::server::http
