#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/core/event_outbox.h"
#include "server/http/openai/choice_writer.h"
#include "server/observability/request_report.h"
#include "server/scheduler/stream_sink.h"
#include "server/transport/http_server.h"

namespace textgen::server::http {

struct OpenAiStreamOptions {
  bool stream = false;  // server-sent events, or one JSON body at the end
  // best_of: of the writers' choices, only this many are returned (not streamed): those with
  // the highest mean token log-probability, best first, numbered from 0. 0: every choice.
  int returned_choices = 0;
  // Events buffered per choice for a client that is not reading; beyond this the request is
  // dropped (as on gRPC). Also: bytes the socket has not taken.
  size_t max_buffered_events = kDefaultMaxBufferedEvents;
  size_t max_unsent_bytes = 8 << 20;
};

// One OpenAI request (any of the API's shapes: ChoiceWriter) between the engine thread and its HTTP
// exchange. Each choice is a request of its own to the scheduler, with its own sink (Sink(i));
// their events are queued under one lock and turned into JSON on the exchange's executor: a stream
// interleaves the choices' chunks (each names its index) and ends, after the last choice, with the
// usage and [DONE]; a body holds every choice. Usage counts the prompt once and every choice's
// completion. A client that disconnects is seen at once (HttpExchange::SetOnClose) and every
// choice's sink reports IsClosed(), so the scheduler frees their slots at the next step; an error
// in one choice ends the response. Reports the outcome (metrics, log line) exactly once.
class OpenAiStream final : public std::enable_shared_from_this<OpenAiStream> {
 public:
  // `writers`: one per choice (`n`), in the response's shape; the first writes what the
  // response has once.
  OpenAiStream(std::shared_ptr<HttpExchange> exchange, const OpenAiStreamOptions& options,
               std::vector<std::unique_ptr<ChoiceWriter>> writers,
               std::unique_ptr<RequestReport> report);

  // The sink choice `index` is submitted with.
  std::shared_ptr<StreamSink> Sink(int index);
  // On the exchange's executor, once the scheduler accepted every choice: watches for the
  // client going away and, for a stream, sends the headers and the first chunks.
  void Begin();
  // On the executor, when a choice could not be submitted: answers with `status` and closes
  // the choices already submitted.
  void Abort(const absl::Status& status);

 private:
  class ChoiceSink;
  // StreamSink of choice `index` (engine thread).
  bool Push(int index, StreamEvent event);
  bool closed() const { return closed_; }

  void Flush();  // executor
  // After the last choice finished: the usage and [DONE], or the whole body.
  void End();
  void Complete(const absl::Status& status, const std::optional<Usage>& usage);
  // best_of: the `n` choices whose writers have the highest mean token log-probability.
  std::vector<ChoiceWriter::Choice> Best(std::vector<ChoiceWriter::Choice> choices, int n) const;
  void FailResponse(const absl::Status& status);

  const std::shared_ptr<HttpExchange> exchange_;
  const OpenAiStreamOptions options_;
  std::vector<std::unique_ptr<ChoiceWriter>> writers_;  // [choice], executor only

  mutable std::mutex mu_;
  std::vector<EventOutbox> outboxes_ ABSL_GUARDED_BY(mu_);  // [choice]
  bool flush_posted_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> closed_{false};  // the client went away or the response ended

  // Executor only.
  std::vector<FinishedEvent> ends_;              // of the choices that finished, in finishing order
  const std::unique_ptr<RequestReport> report_;  // filled and finished by Complete
};

}  // namespace textgen::server::http
