#include "server/grpc/drain.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "grpcpp/health_check_service_interface.h"

namespace textgen::server {
namespace {

sigset_t ShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);  // reload, not shutdown: taken by the same waiting thread
  return set;
}

}  // namespace

absl::Status BlockShutdownSignals() {
  const sigset_t set = ShutdownSignals();
  if (const int error = pthread_sigmask(SIG_BLOCK, &set, nullptr); error != 0) {
    return absl::InternalError(absl::StrCat("pthread_sigmask: ", std::strerror(error)));
  }
  return absl::OkStatus();
}

int WaitForShutdownSignal(const std::function<void()>& on_reload) {
  const sigset_t set = ShutdownSignals();
  for (;;) {
    int signal_number = 0;
    if (sigwait(&set, &signal_number) != 0) continue;
    if (signal_number != SIGHUP) return signal_number;
    if (on_reload) on_reload();
  }
}

void SetServing(grpc::Server& server, bool serving) {
  if (grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService()) {
    health->SetServingStatus(serving);  // "" (overall) and every registered service
  }
}

DrainResult DrainAndShutdown(grpc::Server& server, PreparationPool* preparation,
                             Scheduler* scheduler, absl::Duration timeout, Logger* logger) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + timeout;
  SetServing(server, false);
  // A request accepted before the signal is still being tokenized: let it reach the scheduler.
  if (preparation != nullptr) preparation->WaitUntilIdle(deadline);
  if (scheduler != nullptr) scheduler->StartDrain();
  // Stop listening now rather than once idle: a load balancer (nginx, HAProxy, kube-proxy) sees
  // a closed port as a failed replica and sends new requests, including this replica's
  // sessions, to another one at once, where an open port answering UNAVAILABLE would be hit
  // again by every client retry for as long as the drain lasts. Running streams go on until
  // the deadline; Shutdown returns when they are done (or cancels them there).
  server.Shutdown(absl::ToChronoTime(deadline));
  DrainResult result;
  // Requests from the HTTP API are not gRPC calls: wait for them too.
  result.idle = scheduler == nullptr ||
                scheduler->WaitUntilIdle(std::max(deadline - absl::Now(), absl::ZeroDuration()));
  result.waited = absl::Now() - start;
  if (logger != nullptr) {
    logger->Info(result.idle ? absl::StrFormat("drain: all requests finished in %.3f s",
                                               absl::ToDoubleSeconds(result.waited))
                             : absl::StrFormat("drain: requests still running after %s; "
                                               "cancelled",
                                               absl::FormatDuration(timeout)));
  }
  return result;
}

}  // namespace textgen::server
