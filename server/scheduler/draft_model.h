#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "model/runtime/engine.h"
#include "server/scheduler/kv_sequence.h"

namespace textgen::server {

// One sequence's state in the draft model: its K/V there (always a run of the sequence's own
// tokens from position 0, so a later step continues them), the tokens those K/V hold, and the
// tokens drafted last. Owned by the Sequence, so its K/V go when the request does.
struct DraftState {
  KvSequence kv;
  std::vector<int> tokens;    // the tokens whose K/V are in `kv`, in order
  std::vector<int> proposed;  // the last Draft's tokens
  bool shares = false;        // takes and publishes cached prefixes (DraftRequest::scope)
};

// What Draft is asked for one sequence.
struct DraftRequest {
  DraftState* state;
  std::span<const int> prompt;
  std::span<const int> output;  // ends with the last sampled token
  int max_tokens = 0;           // drafts wanted (> 0)
  // With a scope, a state's first draft starts from the longest prefix of the sequence that
  // the draft model's cache holds under it (an earlier turn of the conversation, a shared
  // system prompt), and Release publishes what it computed. Without, nothing is shared.
  std::optional<model::PrefixScope> scope = std::nullopt;
};

// Drafting for speculative decoding by a smaller model with the target's vocabulary
// (--draft-model), run greedily by an engine of its own on the scheduler's thread. Each
// sequence's K/V in the draft model's cache are kept between steps: a step feeds the draft
// model only the tokens it has not seen (the last sampled one, and after a refused draft the
// ones that replaced it), then decodes the draft one token per forward pass, every drafting
// sequence in the same pass. Drafts only propose: verification keeps a drafted token only when
// it equals what the target samples, so the output does not depend on them.
class DraftModel {
 public:
  // `target_vocab_size`: drafts are below it (a draft model's embedding may be padded past
  // the target's). `max_batch_tokens`: what one forward pass of `engine` may carry.
  DraftModel(model::Engine* engine, int target_vocab_size, int max_batch_tokens);

  // Fills each request's state->proposed with up to max_tokens drafted tokens (greedy). A
  // sequence whose K/V do not fit the draft model's cache gets none this step, and so does
  // every sequence when a forward pass fails: drafting is an optimisation, the requests go on.
  void Draft(std::span<DraftRequest> requests);

  // The request is over: its K/V go, published first when it shares prefixes (they stay
  // cached until the draft model's cache needs the room).
  void Release(DraftState& state);

  const model::KvCache& kv_cache() const { return cache_; }
  // Tokens fed to the draft model so far, and tokens whose K/V came from its cache instead.
  int64_t tokens_fed() const { return tokens_fed_; }
  int64_t tokens_from_cache() const { return tokens_from_cache_; }

 private:
  // Rewinds `state` to the longest run of its tokens that the sequence still starts with,
  // reserves room for the rest of the sequence and `drafts` more tokens, and returns the
  // tokens still to feed; false when there is no room.
  bool Prepare(const DraftRequest& request, std::vector<int>& feed);
  // Runs one forward pass over batch_ and appends the argmax of each logits row to the
  // proposed drafts of rows_owner_ (in batch order). False on failure.
  bool ForwardAndPick();

  model::Engine* engine_;
  model::KvCache& cache_;
  const int vocab_limit_;
  const int max_batch_tokens_;
  // Step scratch: [request] tokens still to feed, the batch and whose logits rows it returns.
  std::vector<std::vector<int>> feed_;
  std::vector<model::SequenceChunk> batch_;
  std::vector<DraftState*> rows_owner_;
  std::vector<int> joined_;  // prompt + output, for a cache lookup
  int64_t tokens_fed_ = 0;
  int64_t tokens_from_cache_ = 0;
};

}  // namespace textgen::server
