#pragma once

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/observability/request_observer.h"

namespace textgen::server {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug" | "info" | "warning" | "error" -> level; INVALID_ARGUMENT names the allowed values.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);

// A tiny line logger: timestamped lines to a FILE (stderr in the server), below-level lines
// dropped. Thread-safe and non-blocking for callers (gRPC reactions log): Log() appends to a
// bounded in-memory queue that a writer thread drains; when the queue is full the line is
// dropped and counted. Destruction writes everything still queued.
class Logger {
 public:
  explicit Logger(LogLevel level, std::FILE* out = stderr, size_t max_queued_lines = 10000);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  bool Enabled(LogLevel level) const { return level >= level_; }
  void Log(LogLevel level, absl::string_view message);
  void Debug(absl::string_view message) { Log(LogLevel::kDebug, message); }
  void Info(absl::string_view message) { Log(LogLevel::kInfo, message); }
  void Warning(absl::string_view message) { Log(LogLevel::kWarning, message); }
  void Error(absl::string_view message) { Log(LogLevel::kError, message); }

 private:
  void WriterLoop();

  const LogLevel level_;
  std::FILE* const out_;
  const size_t max_queued_lines_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_ ABSL_GUARDED_BY(mu_);
  size_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;
};

// Tells the observer (metrics) and writes the one log line of a finished request, the same for
// every front end. `observer` and `logger` may be null. Front ends report through
// RequestReport (request_report.h), which calls this once per request.
void ReportRequestDone(const RequestRecord& record, RequestObserver* observer, Logger* logger);

}  // namespace textgen::server
