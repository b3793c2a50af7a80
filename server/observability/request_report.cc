#include "server/observability/request_report.h"

#include <string>

namespace textgen::server {

bool RequestReport::Finish(const absl::Status& status) {
  if (finished_.exchange(true, std::memory_order_acq_rel)) return false;
  record_.code = status.code();
  record_.message = std::string(status.message());
  record_.duration_seconds = SecondsSinceArrival(absl::Now());
  ReportRequestDone(record_, observer_, logger_);
  return true;
}

}  // namespace textgen::server
