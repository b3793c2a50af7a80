#include "server/scheduler/sequence.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"

namespace textgen::server {
namespace {

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

// Bound of the adapted draft length (the step's own maximum is usually lower).
constexpr int kMaxDraftLength = 64;
// After this many verified steps in a row kept no draft, a sequence stops drafting for a while:
// 2 tokens, then 4, 8, ... up to kMaxDraftPause, until a draft is kept again. A draft that is
// never right then costs a draft now and then instead of one every step.
constexpr int kMissesBeforePause = 2;
constexpr int kMaxDraftPause = 64;

}  // namespace

Sequence::Sequence(ValidatedRequest request, std::shared_ptr<StreamSink> sink,
                   absl::Time submit_time)
    : request_(std::move(request)),
      sink_(std::move(sink)),
      arrival_(request_.arrival_time == absl::InfinitePast() ? submit_time : request_.arrival_time),
      stop_matcher_(request_.stopping.stop_strings) {}

Sequence::~Sequence() = default;

int Sequence::TokensNeeded() const {
  return prompt_length() + std::max(request_.stopping.max_new_tokens, 1);
}

void Sequence::Start(KvSequence kv, int cached_tokens, const model::Tokenizer* tokenizer,
                     absl::Time now) {
  kv_ = std::move(kv);
  cached_tokens_ = cached_tokens;
  prefill_pos_ = cached_tokens;
  admitted_ = now;
  model::SamplingParams params = request_.sampling;
  if (request_.output.logprobs) {
    params.top_logprobs = std::max(params.top_logprobs, request_.output.top_logprobs);
  }
  sampler_ = std::make_unique<model::Sampler>(params, request_.prompt_tokens);
  detokenizer_.emplace(tokenizer, request_.prompt_tokens.back());
  tokenizer_ = tokenizer;
  if (request_.constraint.grammar != nullptr) {
    matcher_.emplace(request_.constraint.grammar);
    allowed_.resize((request_.constraint.token_trie->vocab_size() + 63) / 64);
    constraint_armed_ =
        request_.constraint.trigger.empty() && request_.constraint.trigger_token < 0;
  }
  if (request_.embedding) pooler_.emplace(request_.embedding->pooling);
  if (request_.output.echo) {
    TokenEvent echo;
    echo.text = request_.prompt_text.empty() ? tokenizer->Decode(request_.prompt_tokens)
                                             : request_.prompt_text;
    Push(std::move(echo));
  }
}

model::HiddenRows Sequence::HiddenRowsWanted() const {
  if (!pooler_) return model::HiddenRows::kNone;
  if (pooler_->WantsAll(prefill_pos_)) return model::HiddenRows::kAll;
  return pooler_->WantsLast() ? model::HiddenRows::kLast : model::HiddenRows::kNone;
}

void Sequence::Pool(std::span<const float> hidden, int rows) {
  pooler_->Add(hidden, rows, prefill_pos_);
}

std::span<const int> Sequence::PrefillChunk(int n) const {
  return std::span<const int>(request_.prompt_tokens).subspan(prefill_pos_, n);
}

void Sequence::Advance(int n) {
  if (prefilling()) {
    prefill_pos_ += n;
    if (pooler_ && !prefilling()) finish_reason_ = FinishReason::kEos;  // the embedding is whole
  } else {
    last_token_fed_ = true;
  }
}

void Sequence::SkipCachedPrefill(int n) {
  prefill_pos_ += n;
  cached_tokens_ += n;
}

std::span<const float> Sequence::MaskEarlyStops(std::span<const float> logits) {
  const StoppingParams& stop = request_.stopping;
  // Samples a speculative step kept but has not emitted yet count as generated.
  if (static_cast<int>(generated_.size() + verified_.size()) >= stop.min_new_tokens) return logits;
  masked_.assign(logits.begin(), logits.end());
  const float kBanned = -std::numeric_limits<float>::infinity();
  auto ban = [&](int id) {
    if (id >= 0 && id < static_cast<int>(masked_.size())) masked_[id] = kBanned;
  };
  if (!stop.ignore_eos) {
    for (int id : tokenizer_->end_of_generation_ids()) ban(id);
  }
  for (int id : stop.stop_token_ids) ban(id);
  return masked_;
}

void Sequence::EnsureMaskedCopy(std::span<const float>& logits) {
  if (logits.data() != masked_.data()) {
    masked_.assign(logits.begin(), logits.end());
    logits = masked_;
  }
}

bool Sequence::MaskConstraint(std::span<const float>& logits) {
  const model::TokenTrie& trie = *request_.constraint.token_trie;
  matcher_->FillMask(trie, allowed_);
  EnsureMaskedCopy(logits);
  const int vocab = std::min<int>(static_cast<int>(masked_.size()), trie.vocab_size());
  const float kBanned = -std::numeric_limits<float>::infinity();
  bool any = false;
  for (int id = 0; id < vocab; ++id) {
    if ((allowed_[id >> 6] >> (id & 63)) & 1) {
      any = true;
    } else {
      masked_[id] = kBanned;  // control tokens have no bytes: end tokens are banned here too
    }
  }
  for (size_t id = vocab; id < masked_.size(); ++id) masked_[id] = kBanned;
  return any || matcher_->complete();
}

void Sequence::WatchTrigger(int token) {
  if (token == request_.constraint.trigger_token) {
    trigger_window_.clear();
    constraint_armed_ = true;
    return;
  }
  const std::string& trigger = request_.constraint.trigger;
  if (trigger.empty()) return;
  trigger_window_ += request_.constraint.token_trie->token_bytes(token);
  const size_t at = trigger_window_.find(trigger);
  if (at == std::string::npos) {
    // Keep only what could still be the start of the trigger.
    if (trigger_window_.size() >= trigger.size()) {
      trigger_window_.erase(0, trigger_window_.size() - (trigger.size() - 1));
    }
    return;
  }
  const std::string rest = trigger_window_.substr(at + trigger.size());
  trigger_window_.clear();
  if (!rest.empty() && !matcher_->Accept(rest)) {
    matcher_.reset();  // what follows the trigger is not what the grammar describes
    return;
  }
  constraint_armed_ = true;
}

model::SampleResult Sequence::Sample(std::span<const float> logits) {
  if (!matcher_) return sampler_->Sample(MaskEarlyStops(logits));
  if (!constraint_armed_) {
    model::SampleResult result = sampler_->Sample(MaskEarlyStops(logits));
    WatchTrigger(result.token);
    return result;
  }
  const std::span<const float> raw = logits;
  logits = MaskEarlyStops(logits);
  // Before min_new_tokens the end tokens stay banned, even once the output is complete.
  const bool end_allowed = logits.data() != masked_.data() && !request_.stopping.ignore_eos;
  if (!MaskConstraint(logits)) {
    failure_ = matcher_->status().ok()
                   ? absl::InternalError(absl::StrCat(
                         "request ", request_.request_id,
                         ": no token of the vocabulary continues the constrained output"))
                   : absl::Status(matcher_->status().code(),
                                  absl::StrCat("request ", request_.request_id, ": ",
                                               matcher_->status().message()));
    return {};
  }
  if (matcher_->complete()) {
    // The end is allowed exactly when the output is complete: the model's own scores.
    for (int id : tokenizer_->end_of_generation_ids()) {
      if (id >= 0 && id < static_cast<int>(masked_.size()) && end_allowed) masked_[id] = raw[id];
    }
    bool any = false;
    for (float v : masked_) any = any || v > -std::numeric_limits<float>::infinity();
    if (!any) {
      // Complete and nothing may follow (no end token allowed): the output is done.
      constraint_done_ = true;
      return {};
    }
  }
  model::SampleResult result = sampler_->Sample(logits);
  if (!tokenizer_->IsEndOfGeneration(result.token) &&
      !matcher_->Accept(request_.constraint.token_trie->token_bytes(result.token))) {
    failure_ = absl::InternalError(absl::StrCat("request ", request_.request_id,
                                                ": sampled a token its constraint had banned"));
  }
  return result;
}

bool Sequence::Emit(model::SampleResult sample, absl::Time now, SchedulerObserver* observer) {
  if (!failure_.ok()) return true;
  if (constraint_done_) {
    finish_reason_ = FinishReason::kEos;
    return true;
  }
  const int token = sample.token;
  generated_.push_back(token);
  last_token_fed_ = false;
  if (observer != nullptr) {
    if (generated_.size() == 1) {
      observer->OnFirstToken(Seconds(now - arrival_));
    } else {
      observer->OnToken(Seconds(now - last_token_));
    }
  }
  if (generated_.size() == 1) first_token_ = now;
  last_token_ = now;

  const StoppingParams& stop = request_.stopping;
  pending_ids_.push_back(token);
  if (request_.output.logprobs) pending_logprobs_.push_back(std::move(sample));
  if (!stop.ignore_eos && tokenizer_->IsEndOfGeneration(token)) {
    finish_reason_ = FinishReason::kEos;  // an end-of-generation token adds no text
  } else {
    StopMatcher::Result released = stop_matcher_.Push(detokenizer_->Push(token));
    pending_text_ += released.text;
    if (released.stopped) {
      finish_reason_ = FinishReason::kStopSequence;
      matched_stop_ = std::move(released.matched_stop);
    } else if (std::find(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), token) !=
               stop.stop_token_ids.end()) {
      finish_reason_ = FinishReason::kStopToken;
    }
  }
  const int n = static_cast<int>(generated_.size());
  if (!finish_reason_ && n >= stop.max_new_tokens) finish_reason_ = FinishReason::kLength;
  if (finish_reason_) return true;  // everything pending goes into the FinishedEvent

  if (!pending_text_.empty()) {
    TokenEvent event;
    event.text = std::move(pending_text_);
    event.token_ids = std::move(pending_ids_);
    event.logprobs = std::move(pending_logprobs_);
    pending_text_.clear();
    pending_ids_.clear();
    pending_logprobs_.clear();
    Push(std::move(event));
  }
  return false;
}

int Sequence::DraftWanted(int max_draft) {
  if (draft_length_ == 0) draft_length_ = max_draft;
  // The chunk's K/V must fit the room reserved for prompt + max_new_tokens.
  const int generated = static_cast<int>(generated_.size());
  const int room = request_.stopping.max_new_tokens - generated;
  if (!request_.speculate || generated < resume_drafting_at_) return 0;
  return std::max(std::min({max_draft, draft_length_, room}), 0);
}

std::span<const int> Sequence::DecodeChunk(std::span<const int> drafts) {
  replayed_ = std::clamp(ReplayNeeded(), 0, static_cast<int>(generated_.size()) - 1);
  decode_chunk_.assign(generated_.end() - 1 - replayed_, generated_.end());
  decode_chunk_.insert(decode_chunk_.end(), drafts.begin(), drafts.end());
  return decode_chunk_;
}

void Sequence::SampleDrafted(std::span<const float> rows, int vocab) {
  verified_.clear();
  const int drafts = drafted();
  for (int i = 0; i <= drafts; ++i) {
    model::SampleResult result = Sample(rows.subspan(static_cast<size_t>(i) * vocab, vocab));
    if (!failure_.ok() || constraint_done_) {
      // Plain decoding would reach this end one step after emitting the samples before it.
      if (!verified_.empty()) {
        held_failure_ = std::exchange(failure_, absl::OkStatus());
        held_constraint_done_ = std::exchange(constraint_done_, false);
      } else {
        verified_.push_back(std::move(result));
      }
      return;
    }
    const bool last = i == drafts || result.token != decode_chunk_[replayed_ + i + 1];
    verified_.push_back(std::move(result));
    if (last) return;
  }
}

bool Sequence::EmitDrafted(absl::Time now, SchedulerObserver* observer, int& accepted) {
  accepted = 0;
  bool finished = false;
  const int drafts = drafted();
  for (size_t i = 0; i < verified_.size() && !finished; ++i) {
    if (static_cast<int>(i) < drafts && verified_[i].token == decode_chunk_[replayed_ + i + 1]) {
      ++accepted;
    }
    finished = Emit(std::move(verified_[i]), now, observer);
  }
  verified_.clear();
  if (!finished && (!held_failure_.ok() || held_constraint_done_)) {
    failure_ = std::exchange(held_failure_, absl::OkStatus());
    constraint_done_ = std::exchange(held_constraint_done_, false);
    finished = Emit({}, now, observer);
  }
  held_failure_ = absl::OkStatus();
  held_constraint_done_ = false;
  // The next draft: longer after a run that kept everything, just past what was kept otherwise.
  if (drafts > 0) {
    draft_length_ =
        accepted == drafts ? std::min(2 * draft_length_, kMaxDraftLength) : accepted + 1;
    missed_steps_ = accepted > 0 ? 0 : missed_steps_ + 1;
    if (missed_steps_ >= kMissesBeforePause) {
      const int pause = std::min(1 << std::min(missed_steps_ - 1, 6), kMaxDraftPause);
      resume_drafting_at_ = static_cast<int>(generated_.size()) + pause;
    }
  }
  return finished;
}

int Sequence::KvTokensOwed() const {
  return prompt_length() + static_cast<int>(generated_.size()) - 1;
}

FinishedEvent Sequence::MakeFinished(absl::Time now) {
  FinishedEvent done;
  done.reason = finish_reason_.value_or(FinishReason::kLength);
  if (done.reason != FinishReason::kStopSequence) {
    // Bytes of an unfinished character, then whatever was held for a possible stop string.
    StopMatcher::Result tail = stop_matcher_.Push(detokenizer_->Flush());
    pending_text_ += tail.text;
    if (tail.stopped) {
      done.reason = FinishReason::kStopSequence;
      matched_stop_ = std::move(tail.matched_stop);
    }
  }
  pending_text_ += stop_matcher_.Flush();
  done.text = std::move(pending_text_);
  done.token_ids = std::move(pending_ids_);
  done.logprobs = std::move(pending_logprobs_);
  done.matched_stop = std::move(matched_stop_);
  done.usage.prompt_tokens = prompt_length();
  done.usage.cached_tokens = cached_tokens_;
  done.usage.completion_tokens = static_cast<int>(generated_.size());
  done.timings.queue_seconds = Seconds(admitted_ - arrival_);
  done.timings.time_to_first_token_seconds = Seconds(first_token_ - arrival_);
  done.timings.decode_seconds = Seconds(now - first_token_);
  done.timings.total_seconds = Seconds(now - arrival_);
  done.seed = request_.sampling.seed;
  done.timings.constraint_compile_seconds = request_.constraint.compile_seconds;
  done.timings.constraint_cache_hit = request_.constraint.cache_hit;
  if (pooler_) {
    done.embedding = pooler_->Finish(request_.embedding->dimensions, request_.embedding->normalize);
    done.timings.time_to_first_token_seconds = done.timings.total_seconds;
  }
  return done;
}

void Sequence::Push(StreamEvent event) {
  // After a refused push only the last event is still offered: the sink is owed exactly
  // one FinishedEvent or ErrorEvent.
  if (dropped_ && std::holds_alternative<TokenEvent>(event)) return;
  if (!sink_->Push(std::move(event))) dropped_ = true;
}

std::vector<int> Sequence::KvTokens() const {
  std::vector<int> tokens(request_.prompt_tokens.begin(),
                          request_.prompt_tokens.begin() + prefill_pos_);
  if (!prefilling()) {
    size_t fed = generated_.size() - (last_token_fed_ || generated_.empty() ? 0 : 1);
    tokens.insert(tokens.end(), generated_.begin(), generated_.begin() + fed);
  }
  tokens.resize(std::min<size_t>(tokens.size(), std::max(kv_.length(), 0)));
  return tokens;
}

}  // namespace textgen::server
