#include "server/core/event_outbox.h"

#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace textgen::server {

bool EventOutbox::Push(StreamEvent event) {
  if (overflowed_) return false;
  if (events_.size() >= max_events_) {
    overflowed_ = true;
    events_.clear();
    return false;
  }
  const int tokens = CountTokens(event);
  if (tokens > 0 && !first_token_time_.has_value()) first_token_time_ = absl::Now();
  completion_tokens_ += tokens;
  if (const auto* finished = std::get_if<FinishedEvent>(&event)) usage_ = finished->usage;
  events_.push_back(std::move(event));
  return true;
}

absl::Status EventOutbox::SlowReaderError() const {
  return SlowReaderError(absl::StrCat(max_events_, " events buffered"));
}

absl::Status EventOutbox::SlowReaderError(absl::string_view backlog) {
  return absl::ResourceExhaustedError(
      absl::StrCat("client is not reading its stream fast enough (more than ", backlog,
                   "); the request was cancelled"));
}

}  // namespace textgen::server
