#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "model/chat/chat_output_parser.h"
#include "model/tokenizer/tokenizer.h"
#include "server/core/chat_validation.h"
#include "server/core/event_outbox.h"
#include "server/core/preparation_pool.h"
#include "server/core/validation.h"
#include "server/observability/logging.h"
#include "server/observability/request_observer.h"
#include "server/scheduler/scheduler.h"
#include "server/scheduler/stream_sink.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server {

// What a Generate RPC needs from the service. Everything pointed to outlives the RPC.
struct GenerateDeps {
  Scheduler* scheduler = nullptr;
  const model::Tokenizer* tokenizer = nullptr;
  const ValidationOptions* validation = nullptr;
  const ChatTemplates* chat_templates = nullptr;  // Chat only
  // Where validation (rendering, tokenizing) runs; null: on the calling thread.
  PreparationPool* preparation = nullptr;
  RequestObserver* observer = nullptr;  // may be null
  Logger* logger = nullptr;             // may be null
  // Events buffered for a client that is not reading; beyond this the request is dropped
  // and the RPC ends with RESOURCE_EXHAUSTED.
  size_t max_buffered_events = kDefaultMaxBufferedEvents;
};

class GenerateReactor;

// The per-request outbox between the engine thread (Push) and the gRPC reactor (writes).
// Shared (shared_ptr) by the scheduler and the reactor, so a Push after the RPC is done is
// harmless. Thread-safe: one mutex guards the outbox and the write/finish state; gRPC calls
// (StartWrite, Finish) are made outside it by whichever thread holds the "writer" role, which
// also guarantees the reactor is alive (it cannot reach OnDone before Finish).
class GenerateStream final : public StreamSink,
                             public std::enable_shared_from_this<GenerateStream> {
 public:
  GenerateStream(GenerateReactor* reactor, const model::Tokenizer* tokenizer,
                 size_t max_buffered_events);

  // StreamSink (engine thread).
  bool Push(StreamEvent event) override;
  bool IsClosed() const override;

  // Reactor side (gRPC threads).
  // The request's id (put into every response message) and prompt length, once prepared;
  // call before anything is pushed.
  // `reply` (Chat): how the reply is split into text, reasoning and tool calls.
  void SetPrepared(std::string request_id, int prompt_tokens,
                   std::optional<model::ChatOutputOptions> reply = std::nullopt);
  // Ends the RPC with `status` (not OK) once any write in flight completes.
  void Fail(absl::Status status);
  void OnWriteDone(bool ok);
  // The client went away (`status` is CANCELLED or DEADLINE_EXCEEDED).
  void OnCancel(absl::Status status);
  void OnDone();

  // What happened, for logs and metrics (complete once OnDone has been called).
  struct Summary {
    absl::Status status;  // what the RPC was finished with
    std::string request_id;
    int prompt_tokens = 0;  // as validated (0 when validation failed)
    int completion_tokens = 0;
    std::optional<absl::Time> first_token_time;
    std::optional<Usage> usage;  // from the FinishedEvent
  };
  Summary summary() const;

 private:
  // One step of the write state machine: starts the next write or the Finish if nothing is
  // in flight. Called after every state change.
  void Pump();
  // Fills response_ from `events` (token deltas, maybe a final FinishedEvent). Writer only.
  void BuildResponse(std::deque<StreamEvent>& events);

  const model::Tokenizer* tokenizer_;

  mutable std::mutex mu_;
  // Alive until OnDone, which cannot come before the Finish issued by the writer role.
  GenerateReactor* reactor_ ABSL_GUARDED_BY(mu_);
  std::string request_id_ ABSL_GUARDED_BY(mu_);
  int prompt_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  EventOutbox outbox_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;        // writer role held (a write in flight)
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;  // Finish/StartWriteAndFinish issued
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> close_status_ ABSL_GUARDED_BY(mu_);  // cancel / fail reason

  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  // Touched only by the writer-role holder; alive until OnWriteDone / OnDone.
  v1::GenerateResponse response_;
  // Set in SetPrepared, before anything is pushed; then the writer-role holder's.
  std::optional<model::ChatOutputParser> parser_;
};

// Server-streaming reactor of one Generate or Chat RPC: has the request validated and submitted
// to the scheduler on the preparation pool, then writes what the engine thread pushes into its
// GenerateStream, one write in flight, Finish exactly once. Reactions never block. Deletes
// itself in OnDone.
class GenerateReactor final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  GenerateReactor(const GenerateDeps& deps, grpc::CallbackServerContext* context);

  // Has `request` validated and submitted (or the RPC failed). Call one of them once, right
  // after creation.
  // `principal` is the authenticated caller ("" without API keys).
  void Start(const v1::GenerateRequest& request, const std::string& principal);
  void StartChat(const v1::ChatRequest& request, const std::string& principal);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  const GenerateDeps deps_;
  grpc::CallbackServerContext* const context_;
  RequestContext MakeRequestContext(const std::string& principal) const;
  using Validator = absl::AnyInvocable<absl::StatusOr<ValidatedRequest>() &&>;
  // Runs `validate` and submits its request on the preparation pool. The task touches only the
  // stream and the deps, which outlive it, never the reactor (it may be done by then).
  void Prepare(Validator validate, std::string raw_request_id);

  const absl::Time arrival_time_;
  std::shared_ptr<GenerateStream> stream_;
};

}  // namespace textgen::server
