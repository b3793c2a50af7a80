#pragma once

#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/runtime/engine.h"
#include "model/tokenizer/tokenizer.h"
#include "server/scheduler/draft_model.h"
#include "server/scheduler/request_inbox.h"
#include "server/scheduler/scheduler.h"
#include "server/scheduler/scheduler_observer.h"
#include "server/scheduler/sequence.h"
#include "server/scheduler/session_store.h"

namespace textgen::server {

// Continuous (iteration-level) batching, actor style: one engine thread owns the engine,
// its KV cache, every Sequence and the SessionStore, so the hot path takes no locks. Other
// threads only touch the RequestInbox (bounded, never blocks on the model) and the sinks.
//
// Each step: take commands; expire sessions; drop waiting/running requests that are
// cancelled or past their deadline; admit waiting requests in FCFS order while their whole
// KV reservation (prompt + max_new_tokens) fits; run ONE Engine::Forward with a decode token
// per running sequence first, then prefill chunks, under max_batch_tokens; sample; emit;
// retire finished sequences (their KV handle frees the memory or goes back to the session).
class BatchingScheduler final : public Scheduler {
 public:
  // `draft_engine` (may be null): the draft model of Speculation::kDraft, with the target's
  // vocabulary; driven on the engine thread like `engine`.
  BatchingScheduler(model::Engine* engine, const model::Tokenizer* tokenizer,
                    const SchedulerOptions& options, SchedulerObserver* observer,
                    model::Engine* draft_engine = nullptr);
  ~BatchingScheduler() override;

  absl::Status Submit(ValidatedRequest request, std::shared_ptr<StreamSink> sink) override;
  void DeleteSession(const std::string& session_id, DeleteSessionDone done) override;
  void StartDrain() override;
  bool WaitUntilIdle(absl::Duration timeout) override;

 private:
  enum class Admission { kAdmitted, kNoRoom, kFailed };
  // One chunk of the step's batch and whose it is.
  struct Slot {
    Sequence* seq;
    int tokens;
    bool logits;
    model::HiddenRows hidden;  // what the chunk returns for an embedding's pooling
    bool drafted = false;      // a speculative decode chunk: logits for every token
  };

  // ---- Engine thread ----
  void Run();
  void HandleCommands(std::vector<Command> commands);
  void DropWaiting(absl::Time now);
  void DropRunning(absl::Time now);
  void AdmitWaiting(absl::Time now);
  Admission TryAdmit(Sequence& seq, absl::Time now);
  bool prefix_cache_on() const { return options_.prefix_cache != PrefixCacheScope::kOff; }
  // Whether `seq` takes cached prefixes and publishes its blocks.
  bool SharesPrefixes(const Sequence& seq) const;
  // The prefix-cache scope of a request's K/V.
  model::PrefixScope ScopeOf(const Sequence& seq);
  // Whether a chunk already in this step's batch computes the next block of `seq`'s prompt
  // (same scope, same tokens up to it): then `seq` takes that block from the cache next step
  // instead of computing it too.
  bool ComputedThisStep(const Sequence& seq) const;
  // Whether a running request of the same scope is prefilling the block of `seq`'s prompt
  // that follows its first `cached` tokens (same tokens up to there).
  bool PrefixInFlight(const Sequence& seq, int cached) const;
  bool SameScope(const Sequence& a, const Sequence& b) const;
  // Where the block after `seq`'s first `cached` tokens ends, or -1 when that block cannot
  // come from the cache (not block-aligned, or it holds the last prompt token).
  static int NextBlockEnd(const Sequence& seq, int cached);
  // Whether `other` is prefilling a prompt of `seq`'s scope equal to `seq`'s up to `end`.
  bool SharesPromptUpTo(const Sequence& other, const Sequence& seq, int end) const;
  // One engine step: a batch of decode tokens and prompt chunks, one forward pass, then the
  // sampled tokens out and the finished sequences gone.
  void Step();
  struct StepTokens {
    int decodes = 0;  // sequences decoding
    int drafted = 0;  // speculative tokens after their decode tokens
    int prefill = 0;  // prompt tokens
  };
  // Adds a decode chunk for every generating sequence while `budget` lasts (taking from it).
  void AddDecodes(int& budget, StepTokens& tokens);
  // Adds prompt chunks, in admission order, within `budget`.
  void AddPrefillChunks(int budget, StepTokens& tokens);
  // The forward pass failed: its sequences fail, the server goes on.
  void FailBatch(const absl::Status& forward_error);
  // Pools, publishes finished prompt blocks, samples and emits for every slot.
  void TakeOutputs(const model::ForwardResult& result, absl::Time now);
  // Finished, failed and dropped sequences leave and free their KV.
  void RetireDone(absl::Time now);
  // The most tokens each decoding sequence drafts this step: 0 with speculation off or the
  // batch too busy; else --speculative-draft-tokens shared among the decoding sequences.
  int DraftTokensPerSequence() const;
  // Speculation::kDraft: every decoding sequence's drafts for this step from the draft model
  // (Sequence::draft_state().proposed), in batched forward passes of its engine.
  void DraftWithModel(int max_draft);
  // The drafts of `seq` for a chunk that may draft `max_draft` tokens.
  std::span<const int> DraftsFor(Sequence& seq, int max_draft);
  // After a speculative step: emits the kept samples, gives back the K/V of drafted tokens
  // that were not kept, and reports the verification.
  void EmitDrafted(Sequence& seq, absl::Time now);
  // Ends a request: hands its KV to its session (or frees it), updates the ledger, then
  // pushes the last event.
  void Finish(Sequence& seq, absl::Time now);
  void Fail(Sequence& seq, const absl::Status& status, bool was_waiting);
  void ReleaseKv(Sequence& seq, absl::Time now);
  void FailEverything(const absl::Status& status);
  absl::Time NextWakeTime() const;
  void PublishGauges();

  model::Engine* engine_;
  model::KvCache& kv_cache_;
  const model::Tokenizer* tokenizer_;
  const SchedulerOptions options_;
  SchedulerObserver* observer_;  // may be null
  const int context_length_;
  const int max_fit_tokens_;  // the most K/V tokens one request can ever get

  std::unique_ptr<DraftModel> draft_model_;  // Speculation::kDraft only

  RequestInbox inbox_;

  // Engine-thread state.
  std::deque<std::unique_ptr<Sequence>> waiting_;   // FCFS
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order
  SessionStore sessions_;
  size_t decode_cursor_ = 0;      // round-robin start when decodes exceed the token budget
  bool retry_admission_ = false;  // a running request ended since the last AdmitWaiting
  absl::Time next_session_sweep_ = absl::InfiniteFuture();  // earliest idle-session expiry
  // Step scratch, reused so a steady-state step does not allocate: [chunks in the batch].
  std::vector<model::SequenceChunk> batch_;
  std::vector<Slot> slots_;
  // [sequences sampled this step], in batch (logits row) order.
  struct Sampled {
    Sequence* seq;
    model::SampleResult result;
    int first_row = 0;     // its first logits row
    bool drafted = false;  // a speculative chunk: SampleDrafted over 1 + drafted() rows
  };
  std::vector<Sampled> sampled_;
  std::vector<DraftRequest> draft_requests_;
  std::vector<int> lookup_draft_;

  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace textgen::server
