#include "server/request_inbox.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace textgen::server {

RequestInbox::RequestInbox(int max_queue) : max_queue_(max_queue) {}

absl::Status RequestInbox::Submit(SubmitCommand command) {
  absl::MutexLock lock(&mu_);
  if (stopped_ || draining_) {
    return absl::UnavailableError("server is draining: not accepting new requests");
  }
  if (waiting_ >= max_queue_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("queue full: ", waiting_, " requests waiting (max_queue ", max_queue_, ")"));
  }
  const std::string& session = command.request.session_id;
  if (!session.empty()) {
    if (!busy_sessions_.insert(session).second) {
      return absl::FailedPreconditionError(
          absl::StrCat("session ", session, " is busy: one request at a time per session"));
    }
  }
  ++waiting_;
  ++active_;
  commands_.push_back(std::move(command));
  work_cv_.Signal();
  return absl::OkStatus();
}

absl::Status RequestInbox::PostDelete(DeleteSessionCommand command) {
  absl::MutexLock lock(&mu_);
  if (stopped_) return absl::UnavailableError("scheduler is shutting down");
  if (busy_sessions_.contains(command.session_id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("session ", command.session_id, " is busy: a request is using it"));
  }
  commands_.push_back(std::move(command));
  work_cv_.Signal();
  return absl::OkStatus();
}

std::vector<Command> RequestInbox::Take(bool has_work, absl::Time wake_at) {
  absl::MutexLock lock(&mu_);
  if (!has_work) {
    while (commands_.empty() && !stopped_) {
      if (work_cv_.WaitWithDeadline(&mu_, wake_at)) break;  // timed out
    }
  }
  std::vector<Command> out;
  out.swap(commands_);
  return out;
}

void RequestInbox::MarkAdmitted(int n) {
  if (n == 0) return;
  absl::MutexLock lock(&mu_);
  waiting_ -= n;
}

void RequestInbox::MarkDone(const std::string& session_id, bool was_waiting) {
  absl::MutexLock lock(&mu_);
  if (was_waiting) --waiting_;
  --active_;
  if (!session_id.empty()) busy_sessions_.erase(session_id);
  if (active_ == 0) idle_cv_.SignalAll();
}

void RequestInbox::StartDrain() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
}

void RequestInbox::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  work_cv_.SignalAll();
}

bool RequestInbox::stopped() const {
  absl::MutexLock lock(&mu_);
  return stopped_;
}

bool RequestInbox::WaitUntilIdle(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  while (active_ > 0) {
    if (idle_cv_.WaitWithDeadline(&mu_, deadline)) return active_ == 0;
  }
  return true;
}

}  // namespace textgen::server
