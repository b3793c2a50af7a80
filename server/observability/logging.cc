#include "server/observability/logging.h"

#include <pthread.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace textgen::server {

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "debug") return LogLevel::kDebug;
  if (lower == "info") return LogLevel::kInfo;
  if (lower == "warning" || lower == "warn") return LogLevel::kWarning;
  if (lower == "error") return LogLevel::kError;
  return absl::InvalidArgumentError(
      absl::StrCat("--log-level \"", name, "\" is not one of debug, info, warning, error"));
}

Logger::Logger(LogLevel level, std::FILE* out, size_t max_queued_lines)
    : level_(level), out_(out), max_queued_lines_(max_queued_lines) {
  writer_ = std::thread([this] { WriterLoop(); });
}

Logger::~Logger() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  writer_.join();
}

void Logger::Log(LogLevel level, absl::string_view message) {
  if (!Enabled(level)) return;
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E'};
  std::string line =
      absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()), " ",
                   std::string(1, kLetters[static_cast<int>(level)]), " ", message, "\n");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lines_.size() >= max_queued_lines_) {
      ++dropped_;
      return;
    }
    lines_.push_back(std::move(line));
  }
  cv_.notify_one();
}

void Logger::WriterLoop() {
  pthread_setname_np(pthread_self(), "textgen-log");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !lines_.empty(); });
    std::deque<std::string> batch;
    batch.swap(lines_);
    const size_t dropped = dropped_;
    dropped_ = 0;
    const bool stopping = stopping_;
    lock.unlock();
    // Write outside the lock so loggers never wait on the terminal or pipe.
    for (const std::string& line : batch) std::fwrite(line.data(), 1, line.size(), out_);
    if (dropped > 0) {
      const std::string note = absl::StrCat("(logger dropped ", dropped, " lines: queue full)\n");
      std::fwrite(note.data(), 1, note.size(), out_);
    }
    std::fflush(out_);
    lock.lock();
    if (stopping && lines_.empty()) return;
  }
}

void ReportRequestDone(const RequestRecord& record, RequestObserver* observer, Logger* logger) {
  if (observer != nullptr) observer->OnRequestDone(record);
  if (logger == nullptr || !logger->Enabled(LogLevel::kInfo)) return;
  std::string line = absl::StrFormat(
      "request id=%s api=%s status=%s prompt_tokens=%d cached_tokens=%d completion_tokens=%d "
      "ttft_ms=%s total_ms=%.1f",
      record.request_id.empty() ? "-" : record.request_id, record.api,
      absl::StatusCodeToString(record.code), record.prompt_tokens, record.cached_tokens,
      record.completion_tokens,
      record.time_to_first_token_seconds < 0
          ? std::string("-")
          : absl::StrFormat("%.1f", record.time_to_first_token_seconds * 1e3),
      record.duration_seconds * 1e3);
  if (!record.message.empty()) absl::StrAppend(&line, " error=\"", record.message, "\"");
  logger->Info(line);
}

}  // namespace textgen::server
