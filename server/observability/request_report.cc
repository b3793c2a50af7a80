#include "server/observability/request_report.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace textgen::server {

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
