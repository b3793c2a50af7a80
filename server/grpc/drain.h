#pragma once

#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "server/core/preparation_pool.h"
#include "server/observability/logging.h"
#include "server/scheduler/scheduler.h"

namespace textgen::server {

// SIGTERM / SIGINT handling without signal handlers: the signals are blocked in every thread
// and one thread (main) takes them with sigwait, so no work ever runs in signal context.

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread and in every thread it starts afterwards
// (the mask is inherited). Call first thing in main, before any thread exists.
absl::Status BlockShutdownSignals();

// Waits until SIGTERM or SIGINT arrives (or is already pending); returns its number. Each
// SIGHUP meanwhile calls `on_reload` (may be empty) on this thread.
int WaitForShutdownSignal(const std::function<void()>& on_reload);

// Marks every service NOT_SERVING in the standard health service (if enabled).
void SetServing(grpc::Server& server, bool serving);

struct DrainResult {
  bool idle = false;  // every running request finished within the timeout
  absl::Duration waited;
};

// Graceful stop: health NOT_SERVING, requests still being prepared reach the scheduler (may be
// null), the scheduler stops accepting (HTTP requests get 503),
// the gRPC listener closes at once (new calls fail with UNAVAILABLE and balancers move on to
// another replica), running requests get up to `timeout` to finish, and streams still open
// at the deadline are cancelled. Blocks; call from main only.
DrainResult DrainAndShutdown(grpc::Server& server, PreparationPool* preparation,
                             Scheduler* scheduler, absl::Duration timeout, Logger* logger);

}  // namespace textgen::server
