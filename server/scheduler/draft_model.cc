#include "server/scheduler/draft_model.h"

#include <algorithm>

namespace textgen::server {
namespace {

// The tokens `state` holds that the sequence (prompt + output) still starts with.
int CommonPrefix(const std::vector<int>& held, std::span<const int> prompt,
                 std::span<const int> output) {
  const size_t n = std::min(held.size(), prompt.size() + output.size());
  size_t i = 0;
  for (; i < n; ++i) {
    const int token = i < prompt.size() ? prompt[i] : output[i - prompt.size()];
    if (held[i] != token) break;
  }
  return static_cast<int>(i);
}

// Greedy: the first of the highest logits (a draft only proposes; ties need no rule beyond
// being deterministic).
int ArgMax(std::span<const float> row) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(row.size()); ++i) {
    if (row[i] > row[best]) best = i;
  }
  return best;
}

}  // namespace

DraftModel::DraftModel(model::Engine* engine, int target_vocab_size, int max_batch_tokens)
    : engine_(engine),
      cache_(engine->kv_cache()),
      vocab_limit_(std::min(target_vocab_size, engine->config().vocab_size)),
      max_batch_tokens_(std::max(max_batch_tokens, 1)) {}

bool DraftModel::Prepare(const DraftRequest& request, std::vector<int>& feed) {
  DraftState& state = *request.state;
  feed.clear();
  const int total = static_cast<int>(request.prompt.size() + request.output.size());
  const int context = engine_->config().context_length;
  // The draft's K/V hold the sequence and every draft but the last.
  const int need = total + request.max_tokens - 1;
  if (context > 0 && need > context) return false;
  if (!state.kv.valid()) {
    state.kv = KvSequence(&cache_, request.scope.value_or(0));
    state.tokens.clear();
    state.shares = request.scope.has_value();
    if (state.shares) {
      joined_.assign(request.prompt.begin(), request.prompt.end());
      joined_.insert(joined_.end(), request.output.begin(), request.output.end());
      const int found = cache_.AttachPrefix(state.kv.id(), joined_, total - 1);
      state.tokens.assign(joined_.begin(), joined_.begin() + found);
      tokens_from_cache_ += found;
    }
  }
  // At least the last token is fed again: its logits start the draft.
  const int keep = std::min(CommonPrefix(state.tokens, request.prompt, request.output), total - 1);
  if (keep < state.kv.length() && !cache_.Rewind(state.kv.id(), keep).ok()) return false;
  state.tokens.resize(keep);
  for (int i = keep; i < total; ++i) {
    const size_t at = static_cast<size_t>(i);
    const int token = at < request.prompt.size() ? request.prompt[at]
                                                 : request.output[at - request.prompt.size()];
    // A target id past the draft's vocabulary (a target padded further than the draft).
    if (token < 0 || token >= engine_->config().vocab_size) return false;
    feed.push_back(token);
  }
  if (!cache_.Reserve(state.kv.id(), need).ok()) return false;
  state.proposed.reserve(request.max_tokens);
  return true;
}

bool DraftModel::ForwardAndPick() {
  absl::StatusOr<model::ForwardResult> result = engine_->Forward(batch_);
  if (!result.ok()) return false;
  const int vocab = std::min(vocab_limit_, result->vocab_size);
  for (size_t row = 0; row < rows_owner_.size(); ++row) {
    rows_owner_[row]->proposed.push_back(ArgMax(result->Row(static_cast<int>(row)).first(vocab)));
  }
  return true;
}

void DraftModel::Draft(std::span<DraftRequest> requests) {
  const size_t n = requests.size();
  feed_.resize(std::max(feed_.size(), n));
  std::vector<bool> active(n);
  std::vector<size_t> fed(n, 0);
  for (size_t i = 0; i < n; ++i) {
    requests[i].state->proposed.clear();
    active[i] = requests[i].max_tokens > 0 && Prepare(requests[i], feed_[i]);
  }
  const auto give_up = [&] {
    for (size_t i = 0; i < n; ++i) requests[i].state->proposed.clear();
  };
  // Catch up: every sequence's unseen tokens, in chunks under the batch budget; a sequence's
  // last chunk returns the logits of its first draft.
  std::vector<std::pair<size_t, int>> took;  // (request, tokens) of this pass
  while (true) {
    batch_.clear();
    rows_owner_.clear();
    took.clear();
    int budget = max_batch_tokens_;
    for (size_t i = 0; i < n && budget > 0; ++i) {
      if (!active[i] || fed[i] == feed_[i].size()) continue;
      const int take = static_cast<int>(std::min<size_t>(feed_[i].size() - fed[i], budget));
      const bool last = fed[i] + take == feed_[i].size();
      batch_.push_back(
          {requests[i].state->kv.id(), std::span<const int>(feed_[i]).subspan(fed[i], take), last});
      if (last) rows_owner_.push_back(requests[i].state);
      took.emplace_back(i, take);
      budget -= take;
    }
    if (batch_.empty()) break;
    if (!ForwardAndPick()) return give_up();
    for (const auto& [i, take] : took) {
      tokens_fed_ += take;
      std::vector<int>& held = requests[i].state->tokens;
      held.insert(held.end(), feed_[i].begin() + fed[i], feed_[i].begin() + fed[i] + take);
      fed[i] += take;
    }
  }
  // Decode: each pass feeds every unfinished draft its last token.
  while (true) {
    batch_.clear();
    rows_owner_.clear();
    for (size_t i = 0; i < n; ++i) {
      DraftState& state = *requests[i].state;
      if (!active[i] || state.proposed.empty() ||
          static_cast<int>(state.proposed.size()) >= requests[i].max_tokens) {
        continue;
      }
      if (static_cast<int>(batch_.size()) == max_batch_tokens_) break;  // the rest stop here
      batch_.push_back({state.kv.id(), std::span<const int>(&state.proposed.back(), 1), true});
      rows_owner_.push_back(&state);
    }
    if (batch_.empty()) break;
    // The tokens fed, before ForwardAndPick appends the next drafts.
    for (DraftState* state : rows_owner_) state->tokens.push_back(state->proposed.back());
    tokens_fed_ += static_cast<int64_t>(rows_owner_.size());
    if (!ForwardAndPick()) {
      for (DraftState* state : rows_owner_) state->tokens.pop_back();
      return give_up();
    }
  }
}

void DraftModel::Release(DraftState& state) {
  if (state.kv.valid() && state.shares) cache_.Publish(state.kv.id(), state.tokens);
  state.kv.Reset();
  state.tokens.clear();
  state.proposed.clear();
}

}  // namespace textgen::server
