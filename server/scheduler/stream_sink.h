#pragma once

#include <cstddef>

#include "server/scheduler/stream_event.h"

namespace textgen::server {

// Events one request may have waiting for its client before it counts as a slow reader and is
// cancelled (RESOURCE_EXHAUSTED): the default of every front end's outbox.
inline constexpr size_t kDefaultMaxBufferedEvents = 4096;

// Where the scheduler sends one request's events. Implemented by the gRPC reactor (and by
// test fakes). Thread-safe: the engine thread pushes while gRPC threads drain.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // Appends an event without blocking. Returns false when the client is gone, or its
  // unread output exceeds the buffer limit; the scheduler then drops the request.
  virtual bool Push(StreamEvent event) = 0;
  // True once the client has cancelled or disconnected.
  virtual bool IsClosed() const = 0;
};

}  // namespace textgen::server
