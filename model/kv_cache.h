#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace textgen::model {

// Identifies one sequence's K/V storage inside a KvCache.
using SequenceId = int32_t;

// Per-sequence K/V storage for all layers, grown in blocks from one pool under a byte
// budget. Engine thread only (not thread-safe).
//
// Contract used by the scheduler (see kv_cache.cc for the layout):
//   NewSequence()          a new empty sequence (holds no memory yet)
//   Reserve(id, n)         make room for n tokens in total; RESOURCE_EXHAUSTED past budget
//   Length(id)             tokens whose K/V are stored (Engine::Forward appends)
//   Truncate(id, n)        keep the first n tokens (n <= Length), return spare blocks
//   Fork(id, n)            a new sequence holding a copy of the first n tokens of id
//   Free(id)               give all memory back; id becomes invalid
//
// Constructible on its own (scheduler tests use it with a fake engine):
//   struct KvCacheLayout { int n_layers; int n_kv_heads; int head_dim; int bytes_per_element; };
//   KvCache(const KvCacheLayout& layout, int64_t budget_bytes);
//   int64_t bytes_in_use() const; int64_t budget_bytes() const;
//   int64_t BytesForTokens(int n) const;   // what n tokens of one sequence cost (block-rounded)
class KvCache;

}  // namespace textgen::model
