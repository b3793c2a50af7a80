#include "model/runtime/engine.h"

#include <pthread.h>

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/base/status_macros.h"
#include "model/kernels/attention.h"
#include "model/runtime/system_memory.h"
#include "model/runtime/transformer.h"

namespace textgen::model {

KvCacheLayout KvCacheLayoutFor(const ModelConfig& config, const EngineOptions& options) {
  // Recurrent states stay f32 whatever the K/V's type: every token rewrites them, so rounding
  // would accumulate.
  return KvCacheLayout{
      .n_layers = config.attention_layers(),
      .n_kv_heads = config.n_kv_heads,
      .head_dim = config.head_dim,
      .bytes_per_element = options.kv_cache_f16 ? 2 : 4,
      .recurrent_state_bytes = config.recurrent_state_floats() * int64_t{sizeof(float)}};
}

namespace {

// Engine over a Transformer and a KvCache: validates a batch completely before touching any
// sequence, reserves KV room, runs the forward pass, then advances the sequences.
// Engine thread only. Per-batch bookkeeping lives in vectors reserved for max_batch_tokens.
class EngineImpl final : public Engine {
 public:
  EngineImpl(std::unique_ptr<Transformer> transformer, const ModelConfig& config,
             const EngineOptions& options)
      : transformer_(std::move(transformer)),
        options_(options),
        cache_(KvCacheLayoutFor(config, options), options.kv_cache_bytes) {
    const size_t rows = static_cast<size_t>(options.max_batch_tokens);
    chunks_.reserve(rows);
    tokens_.reserve(rows);
    positions_.reserve(rows);
    logit_rows_.reserve(rows);
    hidden_rows_.reserve(rows);
    states_.reserve(rows);
    seen_.reserve(rows);
  }

  absl::StatusOr<ForwardResult> Forward(std::span<const SequenceChunk> batch) override;
  void ParallelFor(int n, absl::FunctionRef<void(int)> body) override {
    // Dynamic: items differ in cost (top-k, logprobs); the pool size is the engine thread's.
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
    for (int i = 0; i < n; ++i) body(i);
  }

  KvCache& kv_cache() override { return cache_; }
  const ModelConfig& config() const override { return transformer_->config(); }

 private:
  absl::Status Validate(std::span<const SequenceChunk> batch);

  std::unique_ptr<Transformer> transformer_;
  EngineOptions options_;
  KvCache cache_;
  std::vector<ops::AttentionChunk> chunks_;  // [chunks]
  std::vector<int> tokens_;                  // [rows]
  std::vector<int> positions_;               // [rows]
  std::vector<int> logit_rows_;              // [chunks wanting logits]
  std::vector<int> hidden_rows_;             // [rows whose hidden states are wanted]
  std::vector<std::byte*> states_;           // [chunks] recurrent states (hybrids)
  std::vector<SequenceId> seen_;             // [chunks] sorted ids, duplicate check
};

absl::Status EngineImpl::Validate(std::span<const SequenceChunk> batch) {
  const ModelConfig& c = transformer_->config();
  int64_t total = 0;
  seen_.clear();
  for (size_t i = 0; i < batch.size(); ++i) {
    const SequenceChunk& chunk = batch[i];
    const int length = cache_.Length(chunk.sequence);
    if (length < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch[", i, "]: unknown sequence id ", chunk.sequence));
    }
    seen_.push_back(chunk.sequence);
    if (chunk.tokens.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("batch[", i, "]: chunk has no tokens"));
    }
    // Bidirectional attention: every token sees the whole input, so it is one chunk.
    if (!c.causal && length != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "batch[", i, "]: sequence ", chunk.sequence, " already holds ", length,
          " tokens; the model attends bidirectionally, so an input is computed in one chunk"));
    }
    if (chunk.want_logits && !transformer_->has_lm_head()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "batch[", i, "]: logits asked of an encoder model (it has no LM head; it embeds)"));
    }
    for (size_t t = 0; t < chunk.tokens.size(); ++t) {
      if (chunk.tokens[t] < 0 || chunk.tokens[t] >= c.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat("batch[", i, "].tokens[", t, "]: token id ",
                                                       chunk.tokens[t], " outside [0, ",
                                                       c.vocab_size, ")"));
      }
    }
    total += static_cast<int64_t>(chunk.tokens.size());
    const int64_t end = length + static_cast<int64_t>(chunk.tokens.size());
    if (end > c.context_length) {
      return absl::OutOfRangeError(
          absl::StrCat("batch[", i, "]: sequence ", chunk.sequence, " would reach ", end,
                       " tokens, past the model context of ", c.context_length));
    }
    // Admission is the caller's (the scheduler reserves a request's whole K/V up front);
    // the engine only checks, so it never takes memory the admission rules did not grant.
    if (cache_.has_recurrent_state() && cache_.RecurrentState(chunk.sequence) == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("batch[", i, "]: sequence ", chunk.sequence,
                       " has no recurrent state: reserve it first (KvCache::Reserve)"));
    }
    if (const int capacity = cache_.Capacity(chunk.sequence); end > capacity) {
      return absl::FailedPreconditionError(absl::StrCat(
          "batch[", i, "]: sequence ", chunk.sequence, " has room for ", capacity,
          " tokens and the chunk would reach ", end, ": reserve its K/V first (KvCache::Reserve)"));
    }
  }
  // Sorting a reserved vector instead of a hash set: no allocation per batch.
  std::sort(seen_.begin(), seen_.end());
  if (auto dup = std::adjacent_find(seen_.begin(), seen_.end()); dup != seen_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequence ", *dup, " appears more than once in one batch"));
  }
  if (total > options_.max_batch_tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch has ", total, " tokens, more than max_batch_tokens ", options_.max_batch_tokens));
  }
  return absl::OkStatus();
}

absl::StatusOr<ForwardResult> EngineImpl::Forward(std::span<const SequenceChunk> batch) {
  const int vocab = transformer_->config().vocab_size;
  if (batch.empty()) {
    return ForwardResult{.logits = nullptr,
                         .rows = 0,
                         .vocab_size = vocab,
                         .hidden = nullptr,
                         .hidden_rows = 0,
                         .dim = transformer_->config().dim};
  }
  TEXTGEN_RETURN_IF_ERROR(Validate(batch));

  chunks_.clear();
  tokens_.clear();
  positions_.clear();
  logit_rows_.clear();
  hidden_rows_.clear();
  for (const SequenceChunk& chunk : batch) {
    const int start = cache_.Length(chunk.sequence);
    const int n = static_cast<int>(chunk.tokens.size());
    chunks_.push_back(ops::AttentionChunk{.blocks = nullptr,
                                          .start_pos = start,
                                          .n_tokens = n,
                                          .first_row = static_cast<int>(tokens_.size())});
    for (int t = 0; t < n; ++t) {
      tokens_.push_back(chunk.tokens[t]);
      positions_.push_back(start + t);
    }
    if (chunk.want_logits) {
      const int end = static_cast<int>(tokens_.size());
      for (int row = chunk.logits_per_token ? end - n : end - 1; row < end; ++row) {
        logit_rows_.push_back(row);
      }
    }
    const int first = chunk.hidden == HiddenRows::kAll    ? static_cast<int>(tokens_.size()) - n
                      : chunk.hidden == HiddenRows::kLast ? static_cast<int>(tokens_.size()) - 1
                                                          : static_cast<int>(tokens_.size());
    for (int row = first; row < static_cast<int>(tokens_.size()); ++row)
      hidden_rows_.push_back(row);
  }
  states_.clear();
  for (size_t i = 0; i < batch.size(); ++i) {
    chunks_[i].blocks = cache_.BlockTable(batch[i].sequence);
    if (!cache_.has_recurrent_state()) continue;
    states_.push_back(cache_.RecurrentState(batch[i].sequence));
    // Drafted tokens may be rejected: keep the state from before them (KvCache::Rewind).
    if (batch[i].logits_per_token) cache_.Checkpoint(batch[i].sequence);
  }

  BatchPlan plan{chunks_, tokens_, positions_, logit_rows_, hidden_rows_, states_};
  if (absl::Status status = transformer_->Forward(plan, cache_); !status.ok()) {
    // A failure past validation may have advanced some recurrent states: those sequences
    // start over rather than continue from a state that no longer matches their length.
    if (cache_.has_recurrent_state()) {
      for (const SequenceChunk& chunk : batch) cache_.Truncate(chunk.sequence, 0).IgnoreError();
    }
    return status;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    TEXTGEN_RETURN_IF_ERROR(cache_.Append(batch[i].sequence, chunks_[i].n_tokens));
  }
  return ForwardResult{.logits = transformer_->logits(),
                       .rows = static_cast<int>(logit_rows_.size()),
                       .vocab_size = vocab,
                       .hidden = transformer_->hidden_states(),
                       .hidden_rows = static_cast<int>(hidden_rows_.size()),
                       .dim = transformer_->config().dim};
}

std::string GiB(int64_t bytes) {
  return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / (int64_t{1} << 30));
}

// Refuses a model that cannot fit before spending minutes packing weights into memory the
// kernel would then kill the process for.
absl::Status CheckMemory(const LoadedModel& model, const TransformerOptions& transformer_options,
                         const EngineOptions& options) {
  std::optional<int64_t> available;
  if (options.available_memory_bytes >= 0) {
    available = options.available_memory_bytes;
  } else {
    available = AvailableMemoryBytes();
  }
  if (!available) return absl::OkStatus();
  const int64_t transformer =
      Transformer::MemoryNeeded(model.config, model.weights, transformer_options);
  const int64_t needed = transformer + options.kv_cache_bytes;
  if (needed <= *available) return absl::OkStatus();
  // The advice that helps most: about the larger of the two parts. (Weights that stay
  // quantized take the same memory in f32 and bf16 compute.)
  TransformerOptions in_bf16 = transformer_options;
  in_bf16.bf16 = true;
  const bool bf16_helps =
      !transformer_options.bf16 &&
      Transformer::MemoryNeeded(model.config, model.weights, in_bf16) < transformer;
  const char* advice = options.kv_cache_bytes > transformer ? "a smaller KV cache budget"
                       : bf16_helps                         ? "computing in bf16 halves the weights"
                       : transformer_options.bf16
                           ? "this model needs more memory than that even in bf16"
                           : "this model needs more memory than that";
  return absl::ResourceExhaustedError(absl::StrCat(
      "the model needs about ", GiB(needed), " (packed weights and scratch: ", GiB(transformer),
      ", KV cache budget: ", GiB(options.kv_cache_bytes), ") but ", GiB(*available),
      " is available; ", advice));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const LoadedModel& model,
                                                       const EngineOptions& options) {
  if (options.max_batch_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch_tokens must be > 0, got ", options.max_batch_tokens));
  }
  if (options.kv_cache_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kv_cache_bytes must be > 0, got ", options.kv_cache_bytes));
  }
  const TransformerOptions transformer_options{.threads = options.threads,
                                               .bf16 = options.bf16,
                                               .max_batch_tokens = options.max_batch_tokens,
                                               .skinny_max_rows = options.skinny_max_rows,
                                               .quantized_kernels = options.quantized_kernels};
  TEXTGEN_RETURN_IF_ERROR(CheckMemory(model, transformer_options, options));
  // Packing runs OpenMP regions. libgomp keeps a thread pool per thread that ever opened one
  // and counts every pool's threads; once they outnumber the cores its barriers stop spinning
  // and every region of a step waits on a futex (15-20% of 2 cores at 16 streams). Packing on
  // a thread that ends releases its pool, so only the calling thread's (the engine thread's)
  // remains.
  absl::StatusOr<std::unique_ptr<Transformer>> transformer;
  std::thread([&] {
    pthread_setname_np(pthread_self(), "textgen-load");
    transformer =
        Transformer::Create(model.config, model.weights, model.storage, transformer_options);
  }).join();
  if (!transformer.ok()) return transformer.status();
  return std::unique_ptr<Engine>(new EngineImpl(std::move(*transformer), model.config, options));
}

}  // namespace textgen::model
