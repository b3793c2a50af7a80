#pragma once

#include <span>

#include "absl/status/statusor.h"
#include "model/runtime/engine.h"

namespace textgen::testing {

// Reserves each chunk's K/V room, as the scheduler does when it admits a request, then runs
// the forward pass (the engine only checks that the room is there).
inline absl::StatusOr<model::ForwardResult> ReserveAndForward(
    model::Engine& engine, std::span<const model::SequenceChunk> batch) {
  model::KvCache& cache = engine.kv_cache();
  for (const model::SequenceChunk& chunk : batch) {
    const int length = cache.Length(chunk.sequence);
    if (length < 0) continue;  // unknown: Forward names it
    if (absl::Status reserved =
            cache.Reserve(chunk.sequence, length + static_cast<int>(chunk.tokens.size()));
        !reserved.ok()) {
      return reserved;
    }
  }
  return engine.Forward(batch);
}

}  // namespace textgen::testing
