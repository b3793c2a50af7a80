#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer.h"
#include "server/core/validation.h"
#include "server/scheduler/scheduler.h"
#include "server/scheduler/validated_request.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server {

// Most inputs one embeddings request may carry (OpenAI's limit); each is a sequence of its own
// in the scheduler's queue.
inline constexpr int kMaxEmbeddingInputs = 2048;

// Turns an EmbedRequest into one ValidatedRequest per input (the same request id, the
// request's principal): each text tokenized as Generate's (BOS as the model says, EOS when
// the file asks for it), each checked against the vocabulary and the context (an input and
// the one position the scheduler reserves must fit), the texts together within
// --max-prompt-bytes. Errors name the field: "inputs[3].text", "dimensions", ...; an input
// over the context is OUT_OF_RANGE.
absl::StatusOr<std::vector<ValidatedRequest>> ValidateEmbedRequest(
    const v1::EmbedRequest& request, const model::Tokenizer& tokenizer,
    const ValidationOptions& options, const RequestContext& context);

struct EmbeddingResult {
  std::vector<std::vector<float>> embeddings;  // in input order
  int prompt_tokens = 0;
  int cached_tokens = 0;
};

// One embeddings request in the scheduler: every input submitted at once (the engine batches
// them with whatever else runs), their results gathered in input order. `done` is called
// exactly once, on the engine thread (or on the caller's, when a Submit fails): with every
// embedding, or with the first error (the other inputs are then dropped at the next step).
class EmbeddingBatch : public std::enable_shared_from_this<EmbeddingBatch> {
 public:
  using Done = std::function<void(absl::StatusOr<EmbeddingResult>)>;

  static std::shared_ptr<EmbeddingBatch> Start(Scheduler& scheduler,
                                               std::vector<ValidatedRequest> requests, Done done);
  // The client went away: the inputs still queued or running are dropped; `done` is not
  // called after this.
  void Cancel();

 private:
  class InputSink;
  EmbeddingBatch(size_t inputs, Done done);
  // From an input's sink (engine thread). False: the batch no longer wants events.
  bool Push(size_t index, StreamEvent event);
  bool closed() const;
  void Fail(const absl::Status& status);

  mutable std::mutex mu_;
  Done done_ ABSL_GUARDED_BY(mu_);  // empty once called or cancelled
  EmbeddingResult result_ ABSL_GUARDED_BY(mu_);
  size_t remaining_ ABSL_GUARDED_BY(mu_);
};

}  // namespace textgen::server
