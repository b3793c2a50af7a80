#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/scheduler/scheduler.h"

namespace textgen::server::testing {

// A Scheduler without a model for service tests: Submit() records the request and its sink,
// and the test plays the engine thread by pushing events into the sink itself. Queue limit,
// draining and sessions behave like the real contract. Thread-safe.
class FakeScheduler final : public Scheduler {
 public:
  struct Submitted {
    ValidatedRequest request;
    std::shared_ptr<StreamSink> sink;
  };

  absl::Status Submit(ValidatedRequest request, std::shared_ptr<StreamSink> sink) override {
    absl::MutexLock lock(&mu_);
    if (draining_) return absl::UnavailableError("the server is shutting down (draining)");
    if (static_cast<int>(waiting_.size()) >= max_queue_) {
      return absl::ResourceExhaustedError("the request queue is full (fake limit)");
    }
    waiting_.push_back(Submitted{std::move(request), std::move(sink)});
    ++active_;
    return absl::OkStatus();
  }

  void DeleteSession(const std::string& session_id, DeleteSessionDone done) override {
    absl::StatusOr<int> freed = absl::NotFoundError("no session " + session_id);
    {
      absl::MutexLock lock(&mu_);
      if (auto it = sessions_.find(session_id); it != sessions_.end()) {
        freed = it->second;
        sessions_.erase(it);
      }
    }
    std::move(done)(std::move(freed));
  }

  void StartDrain() override {
    absl::MutexLock lock(&mu_);
    draining_ = true;
  }

  bool WaitUntilIdle(absl::Duration timeout) override {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(
                                    +[](int* active) { return *active == 0; }, &active_),
                                timeout);
  }

  // ---- Test controls ----

  // Waits for the next submitted request (up to `timeout`); false if none came.
  bool TakeSubmitted(Submitted& out, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    const auto has_one = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !waiting_.empty(); };
    if (!mu_.AwaitWithTimeout(absl::Condition(&has_one), timeout)) return false;
    out = std::move(waiting_.front());
    waiting_.pop_front();
    return true;
  }
  // A request the test took has ended (its terminal event was pushed or it was dropped).
  void MarkDone() {
    absl::MutexLock lock(&mu_);
    --active_;
  }
  void set_max_queue(int max_queue) {
    absl::MutexLock lock(&mu_);
    max_queue_ = max_queue;
  }
  void AddSession(const std::string& id, int tokens) {
    absl::MutexLock lock(&mu_);
    sessions_[id] = tokens;
  }

 private:
  absl::Mutex mu_;
  std::deque<Submitted> waiting_ ABSL_GUARDED_BY(mu_);
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  int max_queue_ ABSL_GUARDED_BY(mu_) = 16;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, int> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace textgen::server::testing
