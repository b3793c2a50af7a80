#include "server/scheduler/batching_scheduler.h"

#include <pthread.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace textgen::server {
namespace {

int ContextLength(const model::Engine& engine) {
  int ctx = engine.config().context_length;
  return ctx > 0 ? ctx : std::numeric_limits<int>::max();
}

// The most tokens one sequence can hold within the whole budget (beside its recurrent state,
// a fixed cost, for hybrid models).
int MaxFitTokens(const model::KvCache& cache, int context_length) {
  const int64_t block = cache.block_bytes();
  const int64_t fixed = cache.BytesForTokens(model::KvCache::kBlockTokens) - block;
  const int64_t blocks = block > 0 ? std::max<int64_t>(cache.budget_bytes() - fixed, 0) / block : 0;
  return static_cast<int>(std::min<int64_t>(blocks * model::KvCache::kBlockTokens, context_length));
}

// Speculation on a recurrent model rewinds past rejected drafts to a checkpoint of the state,
// which every sequence then holds (and admission counts).
model::KvCache& PrepareCache(model::KvCache& cache, const SchedulerOptions& options) {
  if (options.speculation.mode != Speculation::kOff) cache.EnableCheckpoints();
  return cache;
}

int CommonPrefix(const std::vector<int>& a, const std::vector<int>& b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int>(i);
}

// Limits below 1 would stall the loop (no token could ever be scheduled).
SchedulerOptions Sanitized(SchedulerOptions options) {
  options.max_batch_sequences = std::max(options.max_batch_sequences, 1);
  options.max_batch_tokens = std::max(options.max_batch_tokens, 1);
  if (options.max_prefill_tokens_while_decoding <= 0 ||
      options.max_prefill_tokens_while_decoding > options.max_batch_tokens) {
    options.max_prefill_tokens_while_decoding = options.max_batch_tokens;
  }
  options.max_queue = std::max(options.max_queue, 0);
  options.max_sessions = std::max(options.max_sessions, 0);
  return options;
}

}  // namespace

BatchingScheduler::BatchingScheduler(model::Engine* engine, const model::Tokenizer* tokenizer,
                                     const SchedulerOptions& options, SchedulerObserver* observer,
                                     model::Engine* draft_engine)
    : engine_(engine),
      kv_cache_(PrepareCache(engine->kv_cache(), options)),
      tokenizer_(tokenizer),
      options_(Sanitized(options)),
      observer_(observer),
      context_length_(ContextLength(*engine)),
      max_fit_tokens_(MaxFitTokens(kv_cache_, context_length_)),
      draft_model_(options_.speculation.mode == Speculation::kDraft && draft_engine != nullptr
                       ? std::make_unique<DraftModel>(draft_engine, engine->config().vocab_size,
                                                      options_.max_batch_tokens)
                       : nullptr),
      inbox_(options_.max_queue, options_.max_requests_per_principal),
      sessions_(options_.max_sessions, options_.max_sessions_per_principal, options_.session_ttl),
      thread_([this] { Run(); }) {}

BatchingScheduler::~BatchingScheduler() {
  inbox_.Stop();
  thread_.join();
}

// ---------------------------------------------------------------------------------------
// Any thread
// ---------------------------------------------------------------------------------------

absl::Status BatchingScheduler::Submit(ValidatedRequest request, std::shared_ptr<StreamSink> sink) {
  absl::Status status;
  const int64_t prompt = static_cast<int64_t>(request.prompt_tokens.size());
  const int64_t need = prompt + std::max(request.stopping.max_new_tokens, 1);
  // The first three are broken promises of the caller (validation resolves every request to
  // a sink, a prompt and a length that fits): INTERNAL, not the client's error.
  if (sink == nullptr) {
    status = absl::InternalError(absl::StrCat("request ", request.request_id, ": no stream sink"));
  } else if (prompt == 0) {
    status = absl::InternalError(
        absl::StrCat("request ", request.request_id, ": prompt_tokens is empty"));
  } else if (need > context_length_) {
    // Validation resolves max_new_tokens to fit the context (and tells the client); this is
    // the one check that a request claiming to be validated keeps that promise.
    status = absl::InternalError(
        absl::StrCat("request ", request.request_id, ": prompt (", prompt, ") + max_new_tokens (",
                     request.stopping.max_new_tokens, ") exceed the model context of ",
                     context_length_, " tokens; validation should have refused it"));
  } else if (need > max_fit_tokens_) {
    status = absl::ResourceExhaustedError(
        absl::StrCat("request ", request.request_id, " needs ", need,
                     " KV tokens (prompt + max_new_tokens) but the KV cache budget holds at most ",
                     max_fit_tokens_, " tokens"));
  } else {
    status = inbox_.Submit(SubmitCommand{std::move(request), std::move(sink)});
  }
  if (!status.ok() && observer_ != nullptr) observer_->OnRejected(status);
  return status;
}

void BatchingScheduler::DeleteSession(const std::string& session_id, DeleteSessionDone done) {
  // On refusal the inbox hands the command back, so `done` is answered here, once.
  DeleteSessionCommand command{session_id, std::move(done)};
  if (absl::Status posted = inbox_.PostDelete(command); !posted.ok()) {
    std::move(command.done)(posted);
  }
}

void BatchingScheduler::StartDrain() { inbox_.StartDrain(); }

bool BatchingScheduler::WaitUntilIdle(absl::Duration timeout) {
  return inbox_.WaitUntilIdle(timeout);
}

// ---------------------------------------------------------------------------------------
// Engine thread: the loop
// ---------------------------------------------------------------------------------------

void BatchingScheduler::Run() {
  // Named before its first parallel region: the OpenMP workers it starts inherit the name,
  // so `top -H` shows the engine's threads (and the e2e test counts them).
  pthread_setname_np(pthread_self(), "textgen-engine");
  while (true) {
    // Sleeps only when nothing runs and nothing was freed since the last admission try:
    // then only a command, a waiting deadline or a session expiry can change anything.
    const bool has_work = !running_.empty() || retry_admission_;
    HandleCommands(inbox_.Take(has_work, has_work ? absl::InfinitePast() : NextWakeTime()));
    if (inbox_.stopped()) break;
    const absl::Time now = absl::Now();
    if (now >= next_session_sweep_) {  // not every step: the sweep visits every session
      if (int expired = sessions_.ExpireIdle(now); expired > 0 && observer_ != nullptr) {
        observer_->OnSessionEvicted(expired);
      }
      next_session_sweep_ = sessions_.NextExpiry().value_or(absl::InfiniteFuture());
    }
    DropWaiting(now);
    DropRunning(now);
    AdmitWaiting(now);
    if (!running_.empty()) Step();
    PublishGauges();
  }
  // Nothing is accepted after Stop(), so this takes the last commands.
  HandleCommands(inbox_.Take(/*has_work=*/true, absl::InfinitePast()));
  FailEverything(absl::UnavailableError("scheduler is shutting down"));
  // Every request has ended and given back its blocks: what memory holds goes to disk, so
  // the next process (or another replica) continues these conversations.
  kv_cache_.SpillToDisk();
  PublishGauges();
}

void BatchingScheduler::HandleCommands(std::vector<Command> commands) {
  const absl::Time now = absl::Now();
  for (Command& command : commands) {
    if (auto* submit = std::get_if<SubmitCommand>(&command)) {
      waiting_.push_back(
          std::make_unique<Sequence>(std::move(submit->request), std::move(submit->sink), now));
      if (observer_ != nullptr) observer_->OnQueued(static_cast<int>(waiting_.size()));
    } else if (auto* del = std::get_if<DeleteSessionCommand>(&command)) {
      std::move(del->done)(sessions_.Erase(del->session_id));
    }
  }
}

absl::Time BatchingScheduler::NextWakeTime() const {
  absl::Time wake = next_session_sweep_;
  for (const auto& seq : waiting_) wake = std::min(wake, seq->deadline());
  return wake;
}

void BatchingScheduler::DropWaiting(absl::Time now) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    Sequence& seq = **it;
    if (seq.Dropped()) {
      Fail(seq,
           absl::CancelledError(absl::StrCat("request ", seq.request().request_id,
                                             ": client cancelled while queued")),
           /*was_waiting=*/true);
    } else if (now >= seq.deadline()) {
      Fail(seq,
           absl::DeadlineExceededError(
               absl::StrCat("request ", seq.request().request_id, ": deadline passed after ",
                            absl::FormatDuration(now - seq.arrival()), " in the queue")),
           /*was_waiting=*/true);
    } else {
      ++it;
      continue;
    }
    it = waiting_.erase(it);
  }
}

void BatchingScheduler::DropRunning(absl::Time now) {
  std::erase_if(running_, [&](const std::unique_ptr<Sequence>& ptr) {
    Sequence& seq = *ptr;
    if (seq.Dropped()) {
      Fail(seq,
           absl::CancelledError(absl::StrCat("request ", seq.request().request_id,
                                             ": client cancelled or too slow")),
           /*was_waiting=*/false);
      return true;
    }
    if (now >= seq.deadline()) {
      Fail(seq,
           absl::DeadlineExceededError(
               absl::StrCat("request ", seq.request().request_id, ": deadline passed after ",
                            absl::FormatDuration(now - seq.arrival()), " while generating")),
           /*was_waiting=*/false);
      return true;
    }
    return false;
  });
}

// ---------------------------------------------------------------------------------------
// Engine thread: admission
// ---------------------------------------------------------------------------------------

void BatchingScheduler::AdmitWaiting(absl::Time now) {
  retry_admission_ = false;
  int admitted = 0;
  // Strict FCFS: a head that does not fit blocks everyone behind it, so a big request is
  // never starved by a stream of small ones; running sequences free memory as they finish.
  while (!waiting_.empty() && static_cast<int>(running_.size()) < options_.max_batch_sequences) {
    Admission result = TryAdmit(*waiting_.front(), now);
    if (result == Admission::kNoRoom) break;
    if (result == Admission::kAdmitted) {
      ++admitted;
      if (observer_ != nullptr) {
        observer_->OnAdmitted(absl::ToDoubleSeconds(now - waiting_.front()->arrival()));
      }
      running_.push_back(std::move(waiting_.front()));
    }
    waiting_.pop_front();
  }
  inbox_.MarkAdmitted(admitted);
}

model::PrefixScope BatchingScheduler::ScopeOf(const Sequence& seq) {
  if (options_.prefix_cache != PrefixCacheScope::kPerPrincipal) return 0;
  // A stable hash of the name: the principal finds its blocks again on disk after a restart
  // and on another replica sharing the directory.
  return model::ScopeOfPrincipal(seq.request().principal);
}

BatchingScheduler::Admission BatchingScheduler::TryAdmit(Sequence& seq, absl::Time now) {
  const std::string& sid = seq.session_id();
  const int need = seq.TokensNeeded();
  const std::vector<int>& prompt = seq.request().prompt_tokens;
  Session* session = sid.empty() ? nullptr : sessions_.Find(sid);
  const bool hit = session != nullptr;

  // The K/V to start from: the session's own (cut back to what the prompt still shares), else
  // the longest cached prefix. The last prompt token is always computed, for its logits.
  KvSequence kv;
  if (session != nullptr && session->kv.valid()) {
    const int keep = std::min(
        {CommonPrefix(session->tokens, prompt), seq.prompt_length() - 1, session->kv.length()});
    if (kv_cache_.Truncate(session->kv.id(), keep).ok()) {
      kv = std::move(session->kv);
    } else {
      session->kv.Reset();
    }
    session->tokens.clear();
  }
  if (!kv.valid()) kv = KvSequence(&kv_cache_, ScopeOf(seq));
  // A new sequence, or a session's cut back to nothing (a recurrent model's always is, short of
  // its whole length).
  if (kv.length() == 0 && SharesPrefixes(seq)) {
    kv_cache_.AttachPrefix(kv.id(), prompt, seq.prompt_length() - 1);
  }
  const int cached = kv.length();
  // Gives the K/V back untouched when the request must wait: a session keeps it.
  auto wait = [&]() {
    if (session != nullptr) {
      session->tokens.assign(prompt.begin(), prompt.begin() + cached);
      session->kv = std::move(kv);
    }
    return Admission::kNoRoom;
  };

  // A running request is computing the next blocks of this prompt: admitting now would
  // reserve them a second time. It waits (a few steps: that prefill goes first) and then
  // takes them from the cache, so a burst of requests after one system prompt holds it once.
  if (SharesPrefixes(seq) && PrefixInFlight(seq, cached)) return wait();

  // Room: the whole reservation must fit, counting what idle sessions could give back
  // (cached prefixes nobody references never stand in the way: Reserve reclaims them).
  if (!kv_cache_.Reserve(kv.id(), need).ok()) {
    const int64_t extra =
        kv_cache_.BytesForTokens(need) - kv_cache_.BytesForTokens(kv_cache_.Capacity(kv.id()));
    const int64_t free_bytes = kv_cache_.budget_bytes() - kv_cache_.bytes_in_use();
    if (extra > free_bytes + sessions_.IdleBytes(kv_cache_, sid)) return wait();
    int evicted = 0;
    bool reserved = false;
    while (!reserved && sessions_.EvictLru(/*keep=*/sid)) {
      ++evicted;
      reserved = kv_cache_.Reserve(kv.id(), need).ok();
    }
    if (evicted > 0 && observer_ != nullptr) observer_->OnSessionEvicted(evicted);
    if (!reserved) return wait();
  }

  if (!sid.empty() && session == nullptr) {
    int evicted = 0;
    absl::StatusOr<Session*> created =
        sessions_.Create(sid, now, &evicted, seq.request().principal);
    if (evicted > 0 && observer_ != nullptr) observer_->OnSessionEvicted(evicted);
    if (!created.ok()) {
      Fail(seq, created.status(), /*was_waiting=*/true);
      return Admission::kFailed;
    }
    session = *created;
  }
  if (session != nullptr) {
    session->busy = true;
    session->last_used = now;
    if (observer_ != nullptr) observer_->OnSessionLookup(hit);
  }
  seq.Start(std::move(kv), cached, tokenizer_, now);
  return Admission::kAdmitted;
}

// ---------------------------------------------------------------------------------------
// Engine thread: one batched forward pass
// ---------------------------------------------------------------------------------------

void BatchingScheduler::Step() {
  batch_.clear();
  slots_.clear();
  StepTokens tokens;
  int budget = options_.max_batch_tokens;
  AddDecodes(budget, tokens);
  // Then prompt chunks in admission order; a prompt longer than the rest of the budget
  // continues next step. While streams decode, prefill gets at most max(chunk, decodes)
  // tokens: a compute-bound step then costs at most about twice a pure-decode step, so
  // every stream's next token is never much later than usual, and with many streams
  // decoding new prompts still get a proportional share (their TTFT stays bounded).
  if (tokens.decodes > 0) {
    budget = std::min(budget, std::max(options_.max_prefill_tokens_while_decoding, tokens.decodes));
  }
  AddPrefillChunks(budget, tokens);
  if (batch_.empty()) return;

  const absl::Time start = absl::Now();
  absl::StatusOr<model::ForwardResult> result = engine_->Forward(batch_);
  const absl::Time now = absl::Now();
  if (!result.ok()) return FailBatch(result.status());
  TakeOutputs(*result, now);
  if (observer_ != nullptr) {
    observer_->OnStep(static_cast<int>(slots_.size()),
                      tokens.decodes + tokens.drafted + tokens.prefill, tokens.prefill,
                      absl::ToDoubleSeconds(now - start));
  }
  RetireDone(now);
}

void BatchingScheduler::AddDecodes(int& budget, StepTokens& tokens) {
  // One token per generating sequence keeps every stream moving (with speculation, followed
  // by its drafted tokens while the budget has room for them).
  const size_t n = running_.size();
  const int max_draft = DraftTokensPerSequence();
  if (max_draft > 0 && draft_model_ != nullptr) DraftWithModel(max_draft);
  for (size_t i = 0; i < n && budget > 0; ++i) {
    Sequence& seq = *running_[(decode_cursor_ + i) % n];
    if (seq.prefilling()) continue;
    // A recurrent model's Rewind past rejected drafts left accepted tokens to feed again.
    const int replay = seq.ReplayNeeded();
    std::span<const int> chunk = seq.DecodeToken();
    if (max_draft > 0 || replay > 0) {
      chunk =
          seq.DecodeChunk(DraftsFor(seq, std::max(std::min(max_draft, budget - 1 - replay), 0)));
    }
    const bool drafted = chunk.size() > static_cast<size_t>(1 + seq.replayed());
    batch_.push_back({seq.kv().id(), chunk, /*want_logits=*/true, model::HiddenRows::kNone,
                      /*logits_per_token=*/drafted});
    slots_.push_back(
        {&seq, static_cast<int>(chunk.size()), true, model::HiddenRows::kNone, drafted});
    budget -= static_cast<int>(chunk.size());
    tokens.drafted += drafted ? seq.drafted() : 0;
    ++tokens.decodes;
  }
  decode_cursor_ += tokens.decodes;
}

void BatchingScheduler::AddPrefillChunks(int budget, StepTokens& tokens) {
  for (const auto& ptr : running_) {
    if (budget == 0) break;
    Sequence& seq = *ptr;
    if (!seq.prefilling()) continue;
    if (SharesPrefixes(seq)) {
      // Blocks another request published since this one was admitted.
      const std::vector<int>& prompt = seq.request().prompt_tokens;
      seq.SkipCachedPrefill(kv_cache_.AttachPrefix(seq.kv().id(), prompt, seq.prompt_length() - 1));
      if (ComputedThisStep(seq)) continue;  // wait one step and take it from the cache
    }
    // Bidirectional attention (encoders): an input is one chunk. One that does not fit what
    // is left waits for the next step, and so do those behind it (admission order); inputs
    // are validated to fit a whole step.
    if (!engine_->config().causal && seq.prefill_remaining() > budget) break;
    // Recurrent models: chunks end where a state snapshot is worth taking.
    const int position = seq.kv().length();
    const int take =
        std::min({seq.prefill_remaining(), budget,
                  kv_cache_.SnapshotStop(seq.kv().id(), seq.request().prompt_tokens) - position});
    const bool last = take == seq.prefill_remaining();
    const bool logits = last && !seq.embedding();
    const model::HiddenRows hidden = seq.HiddenRowsWanted();
    batch_.push_back({seq.kv().id(), seq.PrefillChunk(take), logits, hidden});
    slots_.push_back({&seq, take, logits, hidden});
    budget -= take;
    tokens.prefill += take;
  }
}

void BatchingScheduler::FailBatch(const absl::Status& forward_error) {
  // Fail the batch, not the server (the engine guarantees nothing advanced).
  const absl::Status status(forward_error.code(),
                            absl::StrCat("forward pass failed: ", forward_error.message()));
  for (const Slot& slot : slots_) Fail(*slot.seq, status, /*was_waiting=*/false);
  std::erase_if(running_, [&](const std::unique_ptr<Sequence>& seq) {
    return std::any_of(slots_.begin(), slots_.end(),
                       [&](const Slot& s) { return s.seq == seq.get(); });
  });
}

void BatchingScheduler::TakeOutputs(const model::ForwardResult& result, absl::Time now) {
  // Sampling (a pass over the vocab per sequence) runs on the engine's pool; taking the
  // tokens (detokenizer, stop strings, events) stays on this thread, in batch order.
  sampled_.clear();
  int hidden_row = 0;
  int logit_row = 0;
  for (const Slot& slot : slots_) {
    if (slot.hidden != model::HiddenRows::kNone) {
      const int rows = slot.hidden == model::HiddenRows::kAll ? slot.tokens : 1;
      slot.seq->Pool({result.hidden + static_cast<int64_t>(hidden_row) * result.dim,
                      static_cast<size_t>(rows) * result.dim},
                     rows);
      hidden_row += rows;
    }
    const bool prefill = slot.seq->prefilling();
    slot.seq->Advance(slot.tokens);
    // Prompt blocks are shared as soon as they are complete, so requests with the same
    // prefix that are still prefilling take them instead of computing them again.
    if (prefill && SharesPrefixes(*slot.seq)) {
      kv_cache_.Publish(slot.seq->kv().id(), slot.seq->request().prompt_tokens);
    }
    if (slot.logits) {
      // A drafted chunk's rows start with the tokens it fed again, whose logits are not used.
      const int skip = slot.drafted ? slot.seq->replayed() : 0;
      sampled_.push_back({slot.seq, {}, logit_row + skip, slot.drafted});
      logit_row += slot.drafted ? slot.tokens : 1;
    }
  }
  engine_->ParallelFor(static_cast<int>(sampled_.size()), [&](int i) {
    Sampled& s = sampled_[i];
    if (s.drafted) {
      s.seq->SampleDrafted({result.Row(s.first_row).data(),
                            static_cast<size_t>(s.seq->drafted() + 1) * result.vocab_size},
                           result.vocab_size);
    } else {
      s.result = s.seq->Sample(result.Row(s.first_row));
    }
  });
  for (Sampled& s : sampled_) {
    if (s.drafted) {
      EmitDrafted(*s.seq, now);
    } else {
      s.seq->Emit(std::move(s.result), now, observer_);
    }
  }
}

void BatchingScheduler::RetireDone(absl::Time now) {
  // Finished and disconnected sequences leave at once and free their KV.
  std::erase_if(running_, [&](const std::unique_ptr<Sequence>& ptr) {
    Sequence& seq = *ptr;
    if (!seq.failure().ok()) {
      Fail(seq, seq.failure(), /*was_waiting=*/false);
      return true;
    }
    if (seq.finished()) {
      Finish(seq, now);
      return true;
    }
    if (seq.Dropped()) {
      Fail(seq,
           absl::CancelledError(absl::StrCat("request ", seq.request().request_id,
                                             ": client cancelled or too slow")),
           /*was_waiting=*/false);
      return true;
    }
    return false;
  });
}

int BatchingScheduler::DraftTokensPerSequence() const {
  const SpeculationOptions& spec = options_.speculation;
  if (spec.mode == Speculation::kOff || spec.max_draft_tokens <= 0) return 0;
  if (spec.mode == Speculation::kDraft && draft_model_ == nullptr) return 0;
  const int decoding = static_cast<int>(std::count_if(
      running_.begin(), running_.end(), [](const auto& seq) { return !seq->prefilling(); }));
  if (decoding == 0 || decoding > spec.max_batch) return 0;
  // Every drafted row costs about the same; the tokens it may save are worth less the more
  // rows the step already has, so the step's drafts are shared out, not multiplied.
  return spec.max_draft_tokens / decoding;
}

void BatchingScheduler::DraftWithModel(int max_draft) {
  draft_requests_.clear();
  for (const auto& ptr : running_) {
    Sequence& seq = *ptr;
    if (seq.prefilling()) continue;
    seq.draft_state().proposed.clear();
    if (const int wanted = seq.DraftWanted(max_draft); wanted > 0) {
      draft_requests_.push_back({&seq.draft_state(), seq.request().prompt_tokens, seq.output(),
                                 wanted,
                                 SharesPrefixes(seq) ? std::optional(ScopeOf(seq)) : std::nullopt});
    }
  }
  draft_model_->Draft(draft_requests_);
}

std::span<const int> BatchingScheduler::DraftsFor(Sequence& seq, int max_draft) {
  const int wanted = seq.DraftWanted(max_draft);
  if (draft_model_ != nullptr) {
    const std::vector<int>& proposed = seq.draft_state().proposed;
    return std::span<const int>(proposed).first(std::min<size_t>(wanted, proposed.size()));
  }
  lookup_draft_.clear();
  if (wanted > 0) {
    DraftByPromptLookup(seq.request().prompt_tokens, seq.output(), options_.speculation.lookup,
                        wanted, lookup_draft_);
  }
  return lookup_draft_;
}

void BatchingScheduler::EmitDrafted(Sequence& seq, absl::Time now) {
  int accepted = 0;
  const bool finished = seq.EmitDrafted(now, observer_, accepted);
  if (observer_ != nullptr) observer_->OnDraftVerified(seq.drafted(), accepted);
  // The K/V of drafted tokens that were not kept go; what is left is exactly the sequence's.
  const int owed = seq.KvTokensOwed();
  if (seq.kv().length() == owed) return;
  // Drafts are written past the blocks anyone shares (only whole prompt blocks are shared
  // while a request runs), so this keeps the room reserved for the rest of the request.
  const absl::Status rewound = kv_cache_.Rewind(seq.kv().id(), owed);
  if (rewound.ok()) return;
  // Not reached by construction. Truncate still leaves K/V that KvTokens() describes (a
  // finished request hands them on), but a running one has lost its room: it ends here.
  (void)kv_cache_.Truncate(seq.kv().id(), owed);
  if (!finished) {
    seq.SetFailure(absl::InternalError(
        absl::StrCat("request ", seq.request().request_id, ": ", rewound.message())));
  }
}

bool BatchingScheduler::SameScope(const Sequence& a, const Sequence& b) const {
  return options_.prefix_cache == PrefixCacheScope::kGlobal ||
         a.request().principal == b.request().principal;
}

int BatchingScheduler::NextBlockEnd(const Sequence& seq, int cached) {
  const int end = cached + model::KvCache::kBlockTokens;
  // Only a whole block that stops short of the last prompt token can come from the cache.
  if (cached % model::KvCache::kBlockTokens != 0 || end > seq.prompt_length() - 1) return -1;
  return end;
}

bool BatchingScheduler::SharesPrefixes(const Sequence& seq) const {
  // An embedding pooled over every token (mean, cls) needs every token's hidden state, so it
  // computes its whole input; last-token pooling needs only the last, like generation. With
  // bidirectional attention a token's K/V depend on the tokens after it: nothing is shared.
  return prefix_cache_on() && engine_->config().causal &&
         (!seq.embedding() || seq.request().embedding->pooling == model::Pooling::kLast);
}

bool BatchingScheduler::SharesPromptUpTo(const Sequence& other, const Sequence& seq,
                                         int end) const {
  if (!other.prefilling() || other.prompt_length() < end || !SameScope(other, seq) ||
      !SharesPrefixes(other)) {
    return false;
  }
  const std::vector<int>& prompt = seq.request().prompt_tokens;
  return std::equal(prompt.begin(), prompt.begin() + end, other.request().prompt_tokens.begin());
}

bool BatchingScheduler::PrefixInFlight(const Sequence& seq, int cached) const {
  const int end = NextBlockEnd(seq, cached);
  if (end < 0) return false;
  return std::any_of(running_.begin(), running_.end(), [&](const auto& other) {
    return other->kv().length() < end && SharesPromptUpTo(*other, seq, end);
  });
}

bool BatchingScheduler::ComputedThisStep(const Sequence& seq) const {
  const int pos = seq.kv().length();
  const int end = NextBlockEnd(seq, pos);
  if (end < 0) return false;
  return std::any_of(slots_.begin(), slots_.end(), [&](const Slot& slot) {
    const int other_start = slot.seq->kv().length();
    return other_start <= pos && other_start + slot.tokens >= end &&
           SharesPromptUpTo(*slot.seq, seq, end);
  });
}

// ---------------------------------------------------------------------------------------
// Engine thread: endings
// ---------------------------------------------------------------------------------------

void BatchingScheduler::ReleaseKv(Sequence& seq, absl::Time now) {
  if (!seq.started()) return;
  retry_admission_ = true;  // memory (or a batch slot) came free: the head may fit now
  if (draft_model_ != nullptr) draft_model_->Release(seq.draft_state());
  std::vector<int> tokens = seq.KvTokens();
  // Whatever ended the request, its stored K/V are valid: the next turn of a stateless
  // conversation resends them as its prefix.
  if (SharesPrefixes(seq)) kv_cache_.Publish(seq.kv().id(), tokens);
  Session* session = seq.session_id().empty() ? nullptr : sessions_.Find(seq.session_id());
  if (session == nullptr) {
    seq.TakeKv().Reset();
    return;
  }
  session->tokens = std::move(tokens);
  session->kv = seq.TakeKv();
  // Give back the reserved-but-unused tail; the session keeps only what it caches.
  if (!kv_cache_.Truncate(session->kv.id(), session->kv.length()).ok()) {
    session->kv.Reset();
    session->tokens.clear();
  }
  session->busy = false;
  session->last_used = now;
  next_session_sweep_ = std::min(next_session_sweep_, now + options_.session_ttl);
}

void BatchingScheduler::Finish(Sequence& seq, absl::Time now) {
  FinishedEvent done = seq.MakeFinished(now);
  ReleaseKv(seq, now);
  inbox_.MarkDone(seq.request(), /*was_waiting=*/false);
  if (observer_ != nullptr) observer_->OnFinished(done);
  seq.Push(std::move(done));
}

void BatchingScheduler::Fail(Sequence& seq, const absl::Status& status, bool was_waiting) {
  ReleaseKv(seq, absl::Now());
  inbox_.MarkDone(seq.request(), was_waiting);
  if (observer_ != nullptr) observer_->OnFailed(status);
  seq.Push(ErrorEvent{status});
}

void BatchingScheduler::FailEverything(const absl::Status& status) {
  for (auto& seq : waiting_) Fail(*seq, status, /*was_waiting=*/true);
  waiting_.clear();
  for (auto& seq : running_) Fail(*seq, status, /*was_waiting=*/false);
  running_.clear();
  sessions_.Clear();
}

void BatchingScheduler::PublishGauges() {
  if (observer_ == nullptr) return;
  observer_->OnStateGauges(SchedulerGauges{
      .running = static_cast<int>(running_.size()),
      .queued = static_cast<int>(waiting_.size()),
      .sessions = sessions_.size(),
      .kv_bytes_used = kv_cache_.bytes_in_use(),
      .kv_bytes_cached = kv_cache_.bytes_cached(),
      .kv_bytes_budget = kv_cache_.budget_bytes(),
      .kv_blocks_shared = kv_cache_.shared_blocks(),
      .kv_blocks_evicted = kv_cache_.evicted_blocks(),
      .kv_disk = kv_cache_.disk_tier() != nullptr ? &kv_cache_.disk_tier()->stats() : nullptr});
}

// ---------------------------------------------------------------------------------------

std::unique_ptr<Scheduler> CreateBatchingScheduler(model::Engine* engine,
                                                   const model::Tokenizer* tokenizer,
                                                   const SchedulerOptions& options,
                                                   SchedulerObserver* observer,
                                                   model::Engine* draft_engine) {
  return std::make_unique<BatchingScheduler>(engine, tokenizer, options, observer, draft_engine);
}

}  // namespace textgen::server
