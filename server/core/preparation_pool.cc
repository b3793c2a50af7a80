#include "server/core/preparation_pool.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace textgen::server {

PreparationPool::PreparationPool(const PreparationPoolOptions& options) : options_(options) {
  const int threads = std::max(options.threads, 1);
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "textgen-prep");
      Work();
    });
  }
}

PreparationPool::~PreparationPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

absl::Status PreparationPool::Post(absl::AnyInvocable<void() &&> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    if (static_cast<int>(queue_.size()) >= options_.max_queue) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the request preparation queue is full (", queue_.size(),
                       " requests wait to be tokenized; --max-queue); retry later"));
    }
    queue_.push_back(Task{std::move(task), absl::Now()});
    if (options_.observer != nullptr) {
      options_.observer->OnPreparationQueued(static_cast<int>(queue_.size()));
    }
  }
  work_cv_.notify_one();
  return absl::OkStatus();
}

void PreparationPool::Work() {
  while (true) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      if (options_.observer != nullptr) {
        options_.observer->OnPreparationQueued(static_cast<int>(queue_.size()));
      }
    }
    const absl::Time start = absl::Now();
    if (options_.observer != nullptr) {
      options_.observer->OnPreparationStarted(absl::ToDoubleSeconds(start - task.posted));
    }
    std::move(task.run)();
    task.run = nullptr;  // whatever the task held is released before it counts as done
    if (options_.observer != nullptr) {
      options_.observer->OnPreparationDone(absl::ToDoubleSeconds(absl::Now() - start));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    idle_cv_.notify_all();
  }
}

bool PreparationPool::WaitUntilIdle(absl::Time deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto idle = [&] { return queue_.empty() && running_ == 0; };
  // Capped so the chrono conversion cannot overflow; a spurious wake-up is harmless.
  const absl::Time capped = std::min(deadline, absl::Now() + absl::Hours(24));
  return idle_cv_.wait_until(lock, absl::ToChronoTime(capped), idle);
}

}  // namespace textgen::server
