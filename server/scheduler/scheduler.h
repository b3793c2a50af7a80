#pragma once

#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/runtime/engine.h"
#include "model/tokenizer/tokenizer.h"
#include "server/scheduler/prompt_lookup.h"
#include "server/scheduler/scheduler_observer.h"
#include "server/scheduler/stream_sink.h"
#include "server/scheduler/validated_request.h"

namespace textgen::server {

// Which requests may share cached prompt K/V.
enum class PrefixCacheScope {
  kOff,           // no prefix cache: only a session reuses its own K/V
  kPerPrincipal,  // a request reuses prefixes computed for its own principal (API key) only
  kGlobal,        // every request reuses every prefix: one tenant only (timing side channel)
};

// Speculative decoding: a decoding sequence feeds drafted tokens after its last one and the
// forward pass verifies them all; each row is sampled as plain decoding would sample it, and
// a drafted token is kept only while it equals that sample, so the output is bit for bit the
// same with speculation on or off (docs/speculative-decoding.md).
// kNgram drafts by prompt lookup; kDraft by a smaller model with the same vocabulary.
enum class Speculation { kOff, kNgram, kDraft };

struct SpeculationOptions {
  Speculation mode = Speculation::kOff;
  // Tokens drafted per step, shared out among the decoding sequences (8 for one, 2 each for
  // four, none past eight); each sequence adapts its own length below its share.
  int max_draft_tokens = 8;
  // Sequences decoding at once above which nobody drafts, whatever the share (a hard cap).
  // Defaults measured in docs/speculative-decoding.md.
  int max_batch = 8;
  PromptLookupOptions lookup;
};

struct SchedulerOptions {
  int max_batch_sequences = 64;  // running sequences per step
  int max_batch_tokens = 512;    // tokens per forward pass (decode + prefill chunks)
  // Prompt tokens per forward pass while D > 0 sequences decode: at most max(this, D);
  // <= 0: no extra limit. A big prefill chunk makes that step slow for every stream in it
  // (inter-token latency spikes), so prompts trickle in while others decode; on an idle
  // server they use the whole max_batch_tokens for a low TTFT. Default measured in
  // docs/performance.md.
  int max_prefill_tokens_while_decoding = 16;
  int max_queue = 256;  // waiting requests; beyond -> RESOURCE_EXHAUSTED
  // Requests one principal may have queued or running; beyond -> RESOURCE_EXHAUSTED (0 = no
  // limit). Keeps one API key from taking every slot and the whole queue.
  int max_requests_per_principal = 0;
  int max_sessions = 1024;  // sessions kept; beyond -> LRU idle eviction
  // Sessions one principal may keep; beyond -> its own LRU idle session is evicted (0 = no
  // limit of its own), so one key cannot push everyone else's sessions out.
  int max_sessions_per_principal = 0;
  absl::Duration session_ttl = absl::Minutes(10);
  PrefixCacheScope prefix_cache = PrefixCacheScope::kPerPrincipal;
  SpeculationOptions speculation;
};

// Called once with the number of cached tokens a deleted session freed, or why it was not.
using DeleteSessionDone = absl::AnyInvocable<void(absl::StatusOr<int> freed_tokens) &&>;

// Continuous batching over one Engine on one engine thread that it owns. Thread-safe:
// Submit and DeleteSession may be called from any (front-end) thread and never block.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Queues a request; its events go to `sink`. Returns RESOURCE_EXHAUSTED at once when
  // the queue is full, UNAVAILABLE while draining, FAILED_PRECONDITION when the request's
  // session is busy. On OK the sink receives exactly one FinishedEvent or ErrorEvent.
  virtual absl::Status Submit(ValidatedRequest request, std::shared_ptr<StreamSink> sink) = 0;
  // Frees a session's KV cache. `done` runs exactly once: on the engine thread between two
  // steps, or at once on the caller's thread when the deletion is refused (FAILED_PRECONDITION
  // if a request holds the session, UNAVAILABLE when stopped). NOT_FOUND if unknown.
  virtual void DeleteSession(const std::string& session_id, DeleteSessionDone done) = 0;
  // Stops accepting requests (Submit -> UNAVAILABLE); running ones continue.
  virtual void StartDrain() = 0;
  // Blocks until no request is running or queued, or the timeout passes. True if idle.
  virtual bool WaitUntilIdle(absl::Duration timeout) = 0;
};

// Starts the continuous-batching scheduler and its engine thread. `engine`, `tokenizer` and
// `observer` (may be null) must outlive the scheduler; destroying it stops the thread after
// failing whatever is still queued or running with UNAVAILABLE. `draft_engine` (may be null;
// must outlive the scheduler) is Speculation::kDraft's draft model, whose vocabulary the
// caller checked is the target's (model::CheckDraftVocabulary).
std::unique_ptr<Scheduler> CreateBatchingScheduler(model::Engine* engine,
                                                   const model::Tokenizer* tokenizer,
                                                   const SchedulerOptions& options,
                                                   SchedulerObserver* observer,
                                                   model::Engine* draft_engine = nullptr);

}  // namespace textgen::server
