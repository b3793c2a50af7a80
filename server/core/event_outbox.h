#pragma once

#include <cstddef>
#include <deque>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/scheduler/stream_event.h"

namespace textgen::server {

// The per-request queue of events between the engine thread and a front end's writer, shared
// by the gRPC and HTTP streams: bounded (a client that stops reading makes it overflow and the
// request is cancelled), and counting what the request report needs. Not thread-safe on its
// own: its owner calls it under the lock that also guards the owner's write state.
class EventOutbox {
 public:
  explicit EventOutbox(size_t max_events) : max_events_(max_events) {}

  // Queues `event`, counting its tokens, the first token's time and the final usage. At the
  // bound it instead drops everything queued and marks the outbox overflowed; false then, and
  // after any overflow.
  bool Push(StreamEvent event);
  // Drops what is queued (the request ended another way).
  void Clear() { events_.clear(); }

  std::deque<StreamEvent>& events() { return events_; }
  bool overflowed() const { return overflowed_; }
  // What a request whose client reads too slowly ends with (RESOURCE_EXHAUSTED), naming the
  // bound it passed: this outbox's, or `backlog` when a transport measured its own.
  absl::Status SlowReaderError() const;
  static absl::Status SlowReaderError(absl::string_view backlog);

  int completion_tokens() const { return completion_tokens_; }
  std::optional<absl::Time> first_token_time() const { return first_token_time_; }
  std::optional<Usage> usage() const { return usage_; }

 private:
  const size_t max_events_;
  std::deque<StreamEvent> events_;
  bool overflowed_ = false;
  int completion_tokens_ = 0;
  std::optional<absl::Time> first_token_time_;
  std::optional<Usage> usage_;  // from the FinishedEvent
};

}  // namespace textgen::server
