#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "model/runtime/kv_disk_tier.h"
#include "server/scheduler/stream_event.h"

namespace textgen::server {

// The scheduler's state after a step.
struct SchedulerGauges {
  int running = 0;
  int queued = 0;
  int sessions = 0;
  int64_t kv_bytes_used = 0;    // referenced by requests and sessions (shared blocks once)
  int64_t kv_bytes_cached = 0;  // prefix cache blocks nobody references (reclaimable)
  int64_t kv_bytes_budget = 0;
  int kv_blocks_shared = 0;                         // referenced by more than one sequence
  int64_t kv_blocks_evicted = 0;                    // cached blocks reclaimed so far (cumulative)
  const model::KvDiskTierStats* kv_disk = nullptr;  // the disk tier's, if any (valid in the call)
};

// What the scheduler reports as it works; the Prometheus metrics implement it, tests may
// count. Called on the engine thread only (except OnRejected, any thread); must not block.
class SchedulerObserver {
 public:
  virtual ~SchedulerObserver() = default;
  virtual void OnQueued(int queue_depth) {}
  virtual void OnRejected(const absl::Status& status) {}  // refused before queueing
  virtual void OnAdmitted(double queue_seconds) {}
  virtual void OnStep(int batch_sequences, int batch_tokens, int prefill_tokens,
                      double step_seconds) {}
  virtual void OnFirstToken(double seconds_since_arrival) {}
  virtual void OnToken(double inter_token_seconds) {}
  virtual void OnFinished(const FinishedEvent& finished) {}
  virtual void OnFailed(const absl::Status& status) {}
  virtual void OnStateGauges(const SchedulerGauges& gauges) {}
  virtual void OnSessionLookup(bool hit) {}
  virtual void OnSessionEvicted(int count) {}
  // A speculative step of one sequence: `drafted` tokens verified, `accepted` of them kept.
  virtual void OnDraftVerified(int drafted, int accepted) {}
};

}  // namespace textgen::server
