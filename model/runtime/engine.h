#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "model/format/model_loader.h"
#include "model/runtime/kv_cache.h"

namespace textgen::model {

struct EngineOptions {
  // Threads for oneDNN / OpenMP; 0 = all cores.
  int threads = 0;
  // Compute in bf16 (weights and activations) instead of f32. Needs AVX512-BF16.
  bool bf16 = false;
  // Byte budget of the KV cache pool.
  int64_t kv_cache_bytes = int64_t{1} << 30;
  // Store K/V as IEEE half instead of f32: half the memory per token and half the bytes
  // attention reads (llama.cpp's default); f32 keeps logits exact against references.
  bool kv_cache_f16 = false;
  // Largest number of tokens (summed over sequences) one Forward call may carry.
  int max_batch_tokens = 512;
  // Matmuls of up to this many rows use the weight-streaming kernel (same results as
  // oneDNN, faster while reading the weights dominates); -1 keeps the measured default.
  int skinny_max_rows = -1;
  // Keep quantized weights (Q4_0..Q8_0, Q4_K, Q5_K, Q6_K, MXFP4) quantized in memory and multiply
  // them with integer kernels on 8-bit activations (AVX512-VNNI; model/kernels/quant/), as
  // llama.cpp does. false dequantizes them once to the compute type (f32 or bf16) instead:
  // several times the memory, exact against an f32 reference of the dequantized weights.
  bool quantized_kernels = true;
  // Memory Create may assume it can take; -1 reads it from the system (MemAvailable, the
  // cgroup's limit). Create refuses, before loading anything, a model whose weights, scratch
  // and KV cache budget would not fit.
  int64_t available_memory_bytes = -1;
};

// The KV cache layout an engine of `config` with `options` keeps (what its blocks cost).
KvCacheLayout KvCacheLayoutFor(const ModelConfig& config, const EngineOptions& options);

// Which of a chunk's final hidden states (after the output norm: what embeddings pool) to
// return.
enum class HiddenRows { kNone, kLast, kAll };

// Tokens of one sequence in a batch: appended at positions [Length(seq), Length(seq)+n).
struct SequenceChunk {
  SequenceId sequence = -1;
  std::span<const int> tokens;
  // Whether to return the logits of the chunk's last token.
  bool want_logits = true;
  HiddenRows hidden = HiddenRows::kNone;
  // With want_logits: the logits of every token of the chunk, in order, not only the last's
  // (speculative decoding verifies drafted tokens this way). Each row is what decoding the
  // tokens one at a time would give, bit for bit.
  bool logits_per_token = false;
};

// Logits of the chunks that asked for them, in batch order (a chunk with logits_per_token:
// one row per token, in position order): row i is [vocab_size] floats; and
// the hidden states they asked for, in batch order (a chunk's in position order): row i is
// [dim] floats. Valid until the next Forward call. Each row is computed as it would be alone
// (the engine's batch invariance).
struct ForwardResult {
  const float* logits = nullptr;
  int rows = 0;
  int vocab_size = 0;
  const float* hidden = nullptr;
  int hidden_rows = 0;
  int dim = 0;
  std::span<const float> Row(int i) const {
    return {logits + static_cast<int64_t>(i) * vocab_size, static_cast<size_t>(vocab_size)};
  }
  std::span<const float> HiddenRow(int i) const {
    return {hidden + static_cast<int64_t>(i) * dim, static_cast<size_t>(dim)};
  }
};

// The batched transformer forward pass over a loaded model. Immutable weights, mutable
// KV cache and scratch buffers.
//
// Threading, owned here: call Forward and ParallelFor from one thread only (the engine
// thread); their OpenMP pool is that thread's and is the only one in the process. Create
// packs the weights with OpenMP on a thread of its own that has ended when it returns, so it
// may be called from any thread without leaving a second pool behind.
class Engine {
 public:
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const LoadedModel& model,
                                                        const EngineOptions& options);
  virtual ~Engine() = default;

  // Runs one forward pass over all chunks (different sequences, any mix of prefill and
  // decode) and appends their K/V to the cache. Each chunk's sequence must have room for it
  // (the caller reserves: KvCache::Reserve; the engine never takes KV memory itself).
  // Fails with FAILED_PRECONDITION for a chunk without room, INVALID_ARGUMENT for bad token
  // ids, too many tokens, logits asked of an encoder or a second chunk of a sequence in a
  // bidirectional model (ModelConfig::causal false), and OUT_OF_RANGE past the context. On failure
  // no sequence has advanced.
  virtual absl::StatusOr<ForwardResult> Forward(std::span<const SequenceChunk> batch) = 0;

  // Runs body(i) for every i in [0, n), in no set order, on the engine's thread pool (the
  // OpenMP threads that otherwise wait between forward passes). For per-sequence work after
  // a forward pass, such as sampling: body must not share mutable state between different i.
  virtual void ParallelFor(int n, absl::FunctionRef<void(int)> body) = 0;

  virtual KvCache& kv_cache() = 0;
  virtual const ModelConfig& config() const = 0;
};

}  // namespace textgen::model
