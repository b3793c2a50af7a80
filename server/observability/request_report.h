#pragma once

#include <atomic>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/observability/logging.h"
#include "server/observability/request_observer.h"

namespace textgen::server {

// The one record of one request, whatever front end took it and however it ended (refused
// before validation, invalid, cancelled, served): made at arrival, filled as the request goes,
// and reported to the metrics and the log exactly once. Fill record() from one thread at a
// time; Finish() may race with itself (only the first call reports).
class RequestReport {
 public:
  // `api`: the front end ("grpc", "http"). `observer` and `logger` may be null.
  RequestReport(const char* api, RequestObserver* observer, Logger* logger,
                absl::Time arrival = absl::Now())
      : observer_(observer), logger_(logger), arrival_(arrival) {
    record_.api = api;
  }

  RequestRecord& record() { return record_; }
  absl::Time arrival() const { return arrival_; }
  // Seconds from arrival to `t` (the time to first token, say).
  double SecondsSinceArrival(absl::Time t) const { return absl::ToDoubleSeconds(t - arrival_); }

  // Sets the outcome and the duration, then reports; later calls do nothing. True when this
  // call reported.
  bool Finish(const absl::Status& status);
  bool finished() const { return finished_.load(std::memory_order_acquire); }

 private:
  RequestRecord record_;
  RequestObserver* const observer_;
  Logger* const logger_;
  const absl::Time arrival_;
  std::atomic<bool> finished_{false};
};

}  // namespace textgen::server
