#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "model/constraint/grammar_matcher.h"
#include "model/runtime/embedding_pooler.h"
#include "model/runtime/engine.h"
#include "model/runtime/sampler.h"
#include "model/tokenizer/tokenizer.h"
#include "server/scheduler/draft_model.h"
#include "server/scheduler/kv_sequence.h"
#include "server/scheduler/scheduler_observer.h"
#include "server/scheduler/stop_matcher.h"
#include "server/scheduler/stream_event.h"
#include "server/scheduler/stream_sink.h"
#include "server/scheduler/validated_request.h"

namespace textgen::server {

// One request from admission to its last event: KV handle, sampler, detokenizer, stop
// conditions, buffered output and timestamps. Owned by the scheduler; engine thread only.
class Sequence {
 public:
  Sequence(ValidatedRequest request, std::shared_ptr<StreamSink> sink, absl::Time submit_time);
  ~Sequence();
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  const ValidatedRequest& request() const { return request_; }
  const std::string& session_id() const { return request_.session_id; }
  absl::Time arrival() const { return arrival_; }
  absl::Time deadline() const { return request_.deadline; }
  int prompt_length() const { return static_cast<int>(request_.prompt_tokens.size()); }
  // K/V tokens the whole request may need: prompt + max_new_tokens (within the context: a
  // ValidatedRequest's promise, which Scheduler::Submit holds it to).
  int TokensNeeded() const;

  // Whether the client is gone (closed sink, or a Push that returned false).
  bool Dropped() const { return dropped_ || sink_->IsClosed(); }

  // Admission: `kv` already holds the first `cached_tokens` prompt tokens and has room for
  // TokensNeeded(). Sends the echo event when asked.
  void Start(KvSequence kv, int cached_tokens, const model::Tokenizer* tokenizer, absl::Time now);
  bool started() const { return kv_.valid(); }
  const KvSequence& kv() const { return kv_; }

  // ---- Batch building ----
  bool prefilling() const { return prefill_pos_ < prompt_length(); }
  bool embedding() const { return request_.embedding.has_value(); }
  // Which hidden states the embedding's pooling needs from the next prefill chunk.
  model::HiddenRows HiddenRowsWanted() const;
  int prefill_remaining() const { return prompt_length() - prefill_pos_; }
  // The next `n` prompt tokens to prefill.
  std::span<const int> PrefillChunk(int n) const;
  // The token to feed in a decode step (the last one sampled).
  std::span<const int> DecodeToken() const { return {&generated_.back(), 1}; }
  // The output so far, ending with the last sampled token.
  std::span<const int> output() const { return generated_; }
  // How many tokens this sequence drafts in a speculative step that allows `max_draft`:
  // min(max_draft, its draft length adapted to acceptance, what max_new_tokens leaves); 0
  // when the request opted out, and for a while after steps in a row that kept no draft.
  int DraftWanted(int max_draft);
  // A speculative decode step's chunk: the last sampled token, then `drafts`; preceded by the
  // generated tokens the KV cache lost when a recurrent model's Rewind went back to its
  // checkpoint (ReplayNeeded), which are fed again. Valid until the next call.
  std::span<const int> DecodeChunk(std::span<const int> drafts);
  // Generated tokens before the last one whose K/V (and state) must be computed again.
  int ReplayNeeded() const { return KvTokensOwed() - kv_.length(); }
  // Of the chunk DecodeChunk returned last: tokens fed again before the last sampled one.
  int replayed() const { return replayed_; }
  // The sequence's state in the draft model (--draft-model), freed with the sequence.
  DraftState& draft_state() { return draft_state_; }
  // Drafted tokens in the chunk DecodeChunk returned last.
  int drafted() const { return static_cast<int>(decode_chunk_.size()) - 1 - replayed_; }
  // `n` tokens of the last chunk are now in the KV cache.
  void Advance(int n);
  // The next `n` prompt tokens were found in the prefix cache (their K/V are stored).
  void SkipCachedPrefill(int n);
  // Prompt tokens whose K/V came from a cache rather than being computed.
  int cached_tokens() const { return cached_tokens_; }

  // ---- After a forward pass ----
  // An embedding's chunk: the hidden states HiddenRowsWanted() asked for, before Advance.
  // After its last chunk the request is finished, its embedding in MakeFinished's event.
  void Pool(std::span<const float> hidden, int rows);
  // Samples the next token from this sequence's logits row. Touches only this sequence's
  // sampler, so different sequences may sample on different threads at once.
  model::SampleResult Sample(std::span<const float> logits);
  // Takes the sampled token: checks the stop conditions and pushes a TokenEvent when text is
  // ready. Engine thread only. Returns true when the request is finished.
  bool Emit(model::SampleResult sample, absl::Time now, SchedulerObserver* observer);
  // A speculative step: `rows` holds the chunk's logits, one row of `vocab` per chunk token.
  // Samples them in order as Sample would one step at a time, keeping the samples while they
  // equal the drafted tokens (the first that differs, or the one after the last draft, is
  // kept too and ends the run). Same thread rules as Sample.
  void SampleDrafted(std::span<const float> rows, int vocab);
  // Emits what SampleDrafted kept, in order, as Emit (engine thread only). Returns true when
  // the request is finished; `accepted` gets how many drafted tokens were kept.
  bool EmitDrafted(absl::Time now, SchedulerObserver* observer, int& accepted);
  // K/V tokens that are the sequence's: prompt and output but the last sampled token. After
  // a speculative step the K/V of drafted tokens that were not kept lie past this.
  int KvTokensOwed() const;

  bool finished() const { return finish_reason_.has_value(); }
  // Set when the request cannot go on (its constraint tripped a limit); the scheduler fails it.
  const absl::Status& failure() const { return failure_; }
  // Ends the request with `status` (the scheduler fails it after this step).
  void SetFailure(absl::Status status) { failure_ = std::move(status); }
  // The last event of a finished request (flushes held-back text).
  FinishedEvent MakeFinished(absl::Time now);
  // Pushes an event; a false return marks the request as dropped.
  void Push(StreamEvent event);

  // Hands the KV sequence back (for a session) with the tokens it holds.
  KvSequence TakeKv() { return std::move(kv_); }
  std::vector<int> KvTokens() const;

 private:
  // Bans EOS / stop tokens before min_new_tokens by masking a copy of the logits.
  std::span<const float> MaskEarlyStops(std::span<const float> logits);
  // Bans every token the constraint does not allow next (end-of-generation only once the
  // output is complete). Returns false when nothing at all may follow.
  bool MaskConstraint(std::span<const float>& logits);
  // Before the trigger: watches the output for it, arming the constraint.
  void WatchTrigger(int token);
  // Copies `logits` into masked_ unless they are masked_ already.
  void EnsureMaskedCopy(std::span<const float>& logits);

  ValidatedRequest request_;
  std::shared_ptr<StreamSink> sink_;
  absl::Time arrival_;
  bool dropped_ = false;

  KvSequence kv_;
  int cached_tokens_ = 0;
  int prefill_pos_ = 0;          // prompt tokens in the KV cache
  bool last_token_fed_ = false;  // whether generated_.back() is in the KV cache
  std::unique_ptr<model::Sampler> sampler_;
  std::optional<model::IncrementalDetokenizer> detokenizer_;
  StopMatcher stop_matcher_;
  const model::Tokenizer* tokenizer_ = nullptr;   // set by Start; knows the end-of-generation ids
  std::vector<float> masked_;                     // [vocab] scratch for the masks
  std::optional<model::GrammarMatcher> matcher_;  // the constraint's state, when it has one
  std::vector<uint64_t> allowed_;                 // [vocab / 64] the constraint's token mask
  bool constraint_done_ = false;                  // complete, and nothing may follow
  // A lazy constraint (ConstraintParams::trigger): armed once the output holds the trigger;
  // until then the last bytes of the output, to find it across tokens.
  bool constraint_armed_ = true;
  std::string trigger_window_;
  absl::Status failure_;
  std::optional<model::EmbeddingPooler> pooler_;  // embedding requests

  // Speculative decoding: the last decode chunk (last token + drafts), the samples kept by
  // SampleDrafted, an end the samples reached (a constraint failure or completion) held back
  // until the samples before it are emitted, and the draft length adapted to acceptance.
  std::vector<int> decode_chunk_;
  int replayed_ = 0;  // leading tokens of decode_chunk_ fed again (ReplayNeeded)
  std::vector<model::SampleResult> verified_;
  absl::Status held_failure_;
  bool held_constraint_done_ = false;
  int draft_length_ = 0;        // 0: not yet set (starts at the step's maximum)
  int missed_steps_ = 0;        // verified steps in a row that kept no draft
  int resume_drafting_at_ = 0;  // no drafts before the output has this many tokens
  DraftState draft_state_;

  std::vector<int> generated_;
  // Output not yet pushed: text released by the stop matcher, with its tokens.
  std::string pending_text_;
  std::vector<int> pending_ids_;
  std::vector<model::SampleResult> pending_logprobs_;
  std::optional<FinishReason> finish_reason_;
  std::string matched_stop_;

  absl::Time admitted_ = absl::InfinitePast();
  absl::Time first_token_ = absl::InfinitePast();
  absl::Time last_token_ = absl::InfinitePast();
};

}  // namespace textgen::server
