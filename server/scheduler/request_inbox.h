#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/scheduler/scheduler.h"
#include "server/scheduler/stream_sink.h"
#include "server/scheduler/validated_request.h"

namespace textgen::server {

struct SubmitCommand {
  ValidatedRequest request;
  std::shared_ptr<StreamSink> sink;
};

struct DeleteSessionCommand {
  std::string session_id;
  DeleteSessionDone done;  // called by the engine thread
};

using Command = std::variant<SubmitCommand, DeleteSessionCommand>;

// The bounded hand-off between gRPC threads and the engine thread, plus the small ledger
// that lets Submit answer at once (queue depth, busy sessions, draining, idle).
// Thread-safe: any thread posts; one engine thread takes. The lock is held only to move
// commands and update counters, never across model work. (std::mutex rather than
// absl::Mutex: the system absl is not TSan-instrumented, pthreads are intercepted.)
class RequestInbox {
 public:
  // `max_per_principal`: requests one principal may have queued or running (0 = no limit;
  // requests without a principal are not counted).
  RequestInbox(int max_queue, int max_per_principal);

  // Queues a request. RESOURCE_EXHAUSTED when max_queue requests already wait or its principal
  // has max_per_principal in flight, UNAVAILABLE while draining or stopped,
  // FAILED_PRECONDITION when its session is busy.
  absl::Status Submit(SubmitCommand command);
  // Queues a session deletion (moving `command` out) or refuses it, leaving `command` with
  // the caller: FAILED_PRECONDITION when a request holds the session, UNAVAILABLE when stopped.
  absl::Status PostDelete(DeleteSessionCommand& command);

  // Engine thread: returns the queued commands. When `has_work` is false, first sleeps
  // until a command arrives, Stop() is called or `wake_at` passes.
  std::vector<Command> Take(bool has_work, absl::Time wake_at);
  // Engine thread: `n` requests left the waiting queue by being admitted.
  void MarkAdmitted(int n);
  // Engine thread: a request is over (call before its last event is pushed, so a client
  // that saw it can reuse the session at once). `was_waiting`: it never got admitted.
  void MarkDone(const ValidatedRequest& request, bool was_waiting);

  void StartDrain();
  // Stops accepting and wakes the engine thread for good.
  void Stop();
  bool stopped() const;
  // Blocks until no request is queued or running, or the timeout passes.
  bool WaitUntilIdle(absl::Duration timeout);

 private:
  const int max_queue_;
  const int max_per_principal_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // engine thread sleeps here
  std::condition_variable idle_cv_;  // WaitUntilIdle sleeps here
  // All below guarded by mu_.
  std::vector<Command> commands_;
  int waiting_ = 0;  // accepted, not yet admitted or failed
  int active_ = 0;   // accepted, last event not yet pushed
  absl::flat_hash_set<std::string> busy_sessions_;
  absl::flat_hash_map<std::string, int> in_flight_by_principal_;
  bool draining_ = false;
  bool stopped_ = false;
};

}  // namespace textgen::server
