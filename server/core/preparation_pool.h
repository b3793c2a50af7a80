#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace textgen::server {

// Told what the pool does (the metrics implement it). Called on the pool's threads and on the
// threads that post; implementations must be thread-safe and must not block.
class PreparationObserver {
 public:
  virtual ~PreparationObserver() = default;
  // `queued` tasks wait to start (after a Post, and when a task starts).
  virtual void OnPreparationQueued(int queued) = 0;
  // A task starts after waiting `wait_seconds` in the queue.
  virtual void OnPreparationStarted(double wait_seconds) = 0;
  // A task ran for `run_seconds`.
  virtual void OnPreparationDone(double run_seconds) = 0;
};

struct PreparationPoolOptions {
  int threads = 2;      // --prep-threads
  int max_queue = 256;  // tasks waiting to start; beyond -> RESOURCE_EXHAUSTED (--max-queue)
  PreparationObserver* observer = nullptr;  // may be null
};

// Where a request is prepared before the scheduler sees it: parsing a JSON body, rendering a
// chat template, tokenizing (about 85 ms per MiB of prompt). Running that on the transports'
// threads (gRPC callbacks, the HTTP API's two I/O threads) would stall every other connection
// they serve. A few threads of its own and a bounded queue. Thread-safe.
class PreparationPool {
 public:
  explicit PreparationPool(const PreparationPoolOptions& options);
  // Runs every task already queued, then joins the threads: an accepted request always gets
  // its answer.
  ~PreparationPool();
  PreparationPool(const PreparationPool&) = delete;
  PreparationPool& operator=(const PreparationPool&) = delete;

  // Queues `task` to run on a pool thread. RESOURCE_EXHAUSTED (naming --max-queue) when
  // max_queue tasks already wait; the task is then not run.
  absl::Status Post(absl::AnyInvocable<void() &&> task);
  // Blocks until no task is queued or running, or `deadline` passes; true when idle. (Drain:
  // requests accepted before it began reach the scheduler before it stops accepting.)
  bool WaitUntilIdle(absl::Time deadline);

 private:
  struct Task {
    absl::AnyInvocable<void() &&> run;
    absl::Time posted;
  };
  void Work();

  const PreparationPoolOptions options_;
  // std::mutex rather than absl::Mutex: the system absl is not TSan-instrumented.
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<Task> queue_;  // guarded by mu_
  int running_ = 0;         // guarded by mu_
  bool stopping_ = false;   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace textgen::server
