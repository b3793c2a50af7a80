#include "server/scheduler/request_inbox.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace textgen::server {

RequestInbox::RequestInbox(int max_queue, int max_per_principal)
    : max_queue_(max_queue), max_per_principal_(max_per_principal) {}

absl::Status RequestInbox::Submit(SubmitCommand command) {
  std::unique_lock lock(mu_);
  if (stopped_ || draining_) {
    return absl::UnavailableError("server is draining: not accepting new requests");
  }
  if (waiting_ >= max_queue_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("queue full: ", waiting_, " requests waiting (max_queue ", max_queue_, ")"));
  }
  const std::string& principal = command.request.principal;
  if (max_per_principal_ > 0 && !principal.empty()) {
    const auto it = in_flight_by_principal_.find(principal);
    if (it != in_flight_by_principal_.end() && it->second >= max_per_principal_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "principal ", principal, " has ", it->second,
          " requests queued or running (max_requests_per_principal ", max_per_principal_, ")"));
    }
  }
  const std::string& session = command.request.session_id;
  if (!session.empty()) {
    if (!busy_sessions_.insert(session).second) {
      return absl::FailedPreconditionError(
          absl::StrCat("session ", session, " is busy: one request at a time per session"));
    }
  }
  if (!principal.empty()) ++in_flight_by_principal_[principal];
  ++waiting_;
  ++active_;
  commands_.push_back(std::move(command));
  work_cv_.notify_one();
  return absl::OkStatus();
}

absl::Status RequestInbox::PostDelete(DeleteSessionCommand& command) {
  std::unique_lock lock(mu_);
  if (stopped_) return absl::UnavailableError("scheduler is shutting down");
  if (busy_sessions_.contains(command.session_id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("session ", command.session_id, " is busy: a request is using it"));
  }
  commands_.push_back(std::move(command));
  work_cv_.notify_one();
  return absl::OkStatus();
}

std::vector<Command> RequestInbox::Take(bool has_work, absl::Time wake_at) {
  std::unique_lock lock(mu_);
  auto ready = [&] { return !commands_.empty() || stopped_; };
  if (!has_work && !ready()) {
    if (wake_at == absl::InfiniteFuture()) {
      work_cv_.wait(lock, ready);
    } else {
      // Capped so the chrono conversion cannot overflow; a spurious wake-up is harmless.
      wake_at = std::min(wake_at, absl::Now() + absl::Hours(1));
      work_cv_.wait_until(lock, absl::ToChronoTime(wake_at), ready);
    }
  }
  std::vector<Command> out;
  out.swap(commands_);
  return out;
}

void RequestInbox::MarkAdmitted(int n) {
  if (n == 0) return;
  std::unique_lock lock(mu_);
  waiting_ -= n;
}

void RequestInbox::MarkDone(const ValidatedRequest& request, bool was_waiting) {
  std::unique_lock lock(mu_);
  if (was_waiting) --waiting_;
  --active_;
  if (!request.session_id.empty()) busy_sessions_.erase(request.session_id);
  if (!request.principal.empty()) {
    const auto it = in_flight_by_principal_.find(request.principal);
    if (it != in_flight_by_principal_.end() && --it->second <= 0) {
      in_flight_by_principal_.erase(it);
    }
  }
  if (active_ == 0) idle_cv_.notify_all();
}

void RequestInbox::StartDrain() {
  std::unique_lock lock(mu_);
  draining_ = true;
}

void RequestInbox::Stop() {
  std::unique_lock lock(mu_);
  stopped_ = true;
  work_cv_.notify_all();
}

bool RequestInbox::stopped() const {
  std::unique_lock lock(mu_);
  return stopped_;
}

bool RequestInbox::WaitUntilIdle(absl::Duration timeout) {
  timeout = std::min(timeout, absl::Hours(24));
  std::unique_lock lock(mu_);
  return idle_cv_.wait_until(lock, absl::ToChronoTime(absl::Now() + timeout),
                             [&] { return active_ == 0; });
}

}  // namespace textgen::server
