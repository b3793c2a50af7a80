#include "server/core/embedding.h"

#include <utility>
#include <variant>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/base/status_macros.h"
#include "model/tokenizer/utf8.h"
#include "server/core/validation.h"

namespace textgen::server {
namespace {

using absl::StrCat;

// The input's tokens, or why it has none that can be embedded.
absl::StatusOr<std::vector<int>> InputTokens(const v1::EmbedInput& input, const std::string& field,
                                             const model::Tokenizer& tokenizer,
                                             const ValidationOptions& options) {
  std::vector<int> tokens;
  switch (input.input_case()) {
    case v1::EmbedInput::kText: {
      const std::string text_field = StrCat(field, ".text");
      if (input.text().empty()) return InvalidField(text_field, "is empty; send some text");
      TEXTGEN_RETURN_IF_ERROR(WithField(model::CheckUtf8(input.text(), text_field), text_field));
      tokens = tokenizer.Encode(input.text(), options.add_bos);
      if (options.add_eos && tokenizer.eos_id() >= 0) tokens.push_back(tokenizer.eos_id());
      if (tokens.empty()) return InvalidField(text_field, "encodes to no tokens");
      break;
    }
    case v1::EmbedInput::kTokens: {
      const std::string ids_field = StrCat(field, ".tokens.ids");
      const auto& ids = input.tokens().ids();
      if (ids.empty()) return InvalidField(ids_field, "is empty; send at least one token id");
      TEXTGEN_RETURN_IF_ERROR(ValidateTokenIds(ids, tokenizer.vocab_size(), ids_field));
      tokens.assign(ids.begin(), ids.end());
      break;
    }
    default:
      return InvalidField(field, "is missing: set either text or tokens");
  }
  if (options.max_embedding_tokens > 0 &&
      static_cast<int64_t>(tokens.size()) > options.max_embedding_tokens) {
    return FieldError(
        absl::StatusCode::kOutOfRange, field,
        StrCat("is ", tokens.size(),
               " tokens; this model attends over a whole input at once, so "
               "an input is at most ",
               options.max_embedding_tokens, " tokens (server flag --max-batch-tokens)"));
  }
  // The scheduler reserves one position past the input (as for a request's first new token).
  if (static_cast<int64_t>(tokens.size()) >= options.context_length) {
    return FieldError(
        absl::StatusCode::kOutOfRange, field,
        StrCat("is ", tokens.size(), " tokens; the model's context length of ",
               options.context_length, " tokens takes at most ", options.context_length - 1));
  }
  return tokens;
}

}  // namespace

absl::StatusOr<std::vector<ValidatedRequest>> ValidateEmbedRequest(
    const v1::EmbedRequest& request, const model::Tokenizer& tokenizer,
    const ValidationOptions& options, const RequestContext& context) {
  TEXTGEN_RETURN_IF_ERROR(ValidateRequestId(request.request_id()));
  const int inputs = request.inputs_size();
  if (inputs == 0) return InvalidField("inputs", "is empty; send at least one input");
  if (inputs > kMaxEmbeddingInputs) {
    return InvalidField("inputs", StrCat("has ", inputs, " entries; at most ", kMaxEmbeddingInputs,
                                         " are allowed"));
  }
  if (options.embedding_dim > 0 &&
      request.dimensions() > static_cast<uint32_t>(options.embedding_dim)) {
    return InvalidField("dimensions", StrCat("must be in [1, ", options.embedding_dim,
                                             "] (the model's width), got ", request.dimensions()));
  }
  // The work bound before any tokenizing: every text together.
  size_t bytes = 0;
  for (const v1::EmbedInput& input : request.inputs()) bytes += input.text().size();
  if (bytes > options.max_prompt_bytes) {
    return InvalidField("inputs",
                        StrCat("hold ", bytes, " bytes of text; at most ", options.max_prompt_bytes,
                               " are accepted (server flag --max-prompt-bytes)"));
  }
  std::string request_id = request.request_id();
  if (request_id.empty()) {
    absl::BitGen bitgen;
    request_id = absl::StrFormat(
        "req-%016x", context.random ? context.random() : absl::Uniform<uint64_t>(bitgen));
  }
  std::vector<ValidatedRequest> out;
  out.reserve(static_cast<size_t>(inputs));
  for (int i = 0; i < inputs; ++i) {
    absl::StatusOr<std::vector<int>> tokens =
        InputTokens(request.inputs(i), StrCat("inputs[", i, "]"), tokenizer, options);
    if (!tokens.ok()) return tokens.status();
    ValidatedRequest r;
    r.request_id = request_id;
    r.prompt_tokens = *std::move(tokens);
    r.principal = context.principal;
    r.stopping.max_new_tokens = 0;
    r.embedding = EmbeddingParams{.pooling = options.pooling,
                                  .dimensions = static_cast<int>(request.dimensions()),
                                  .normalize = !request.has_normalize() || request.normalize()};
    r.arrival_time = context.arrival_time;
    r.deadline = context.deadline;
    out.push_back(std::move(r));
  }
  return out;
}

// What the scheduler holds for one input.
class EmbeddingBatch::InputSink final : public StreamSink {
 public:
  InputSink(std::shared_ptr<EmbeddingBatch> batch, size_t index)
      : batch_(std::move(batch)), index_(index) {}
  bool Push(StreamEvent event) override { return batch_->Push(index_, std::move(event)); }
  bool IsClosed() const override { return batch_->closed(); }

 private:
  const std::shared_ptr<EmbeddingBatch> batch_;
  const size_t index_;
};

EmbeddingBatch::EmbeddingBatch(size_t inputs, Done done)
    : done_(std::move(done)), remaining_(inputs) {
  result_.embeddings.resize(inputs);
}

std::shared_ptr<EmbeddingBatch> EmbeddingBatch::Start(Scheduler& scheduler,
                                                      std::vector<ValidatedRequest> requests,
                                                      Done done) {
  std::shared_ptr<EmbeddingBatch> batch(new EmbeddingBatch(requests.size(), std::move(done)));
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::Status submitted =
        scheduler.Submit(std::move(requests[i]), std::make_shared<InputSink>(batch, i));
    if (!submitted.ok()) {
      // The inputs already queued are dropped: their sinks report closed from now on.
      batch->Fail(requests.size() == 1
                      ? submitted
                      : absl::Status(submitted.code(), StrCat(submitted.message(), " (input ", i,
                                                              " of ", requests.size(),
                                                              ": an embeddings request takes a "
                                                              "queue slot per input)")));
      break;
    }
  }
  return batch;
}

void EmbeddingBatch::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = nullptr;
}

bool EmbeddingBatch::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_ == nullptr;
}

void EmbeddingBatch::Fail(const absl::Status& status) {
  Done done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done = std::exchange(done_, nullptr);
  }
  if (done) done(status);
}

bool EmbeddingBatch::Push(size_t index, StreamEvent event) {
  if (auto* error = std::get_if<ErrorEvent>(&event)) {
    Fail(error->status);
    return false;
  }
  auto* finished = std::get_if<FinishedEvent>(&event);
  if (finished == nullptr) return !closed();  // no text is generated; nothing else comes
  Done done;
  EmbeddingResult result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ == nullptr) return false;
    result_.embeddings[index] = std::move(finished->embedding);
    result_.prompt_tokens += finished->usage.prompt_tokens;
    result_.cached_tokens += finished->usage.cached_tokens;
    if (--remaining_ > 0) return true;
    done = std::exchange(done_, nullptr);
    result = std::move(result_);
  }
  done(std::move(result));
  return true;
}

}  // namespace textgen::server
