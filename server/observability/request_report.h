#pragma once

#include "server/observability/logging.h"
#include "server/observability/request_observer.h"

namespace textgen::server {

// Tells the observer (metrics) and writes the one log line of a finished generation request,
// the same for every front end. `observer` and `logger` may be null.
void ReportRequestDone(const RequestRecord& record, RequestObserver* observer, Logger* logger);

}  // namespace textgen::server
