#pragma once

#include <utility>

#include "model/runtime/kv_cache.h"

namespace textgen::server {

// Move-only owner of one KV-cache sequence: frees it on destruction, so every exit path
// (finish, cancel, error, eviction, shutdown) gives the memory back. Engine thread only.
class KvSequence {
 public:
  KvSequence() = default;
  // A new empty sequence whose blocks are found and indexed under `scope`.
  explicit KvSequence(model::KvCache* cache, model::PrefixScope scope = 0)
      : cache_(cache), id_(cache->NewSequence(scope)) {}
  ~KvSequence() { Reset(); }
  KvSequence(KvSequence&& other) noexcept
      : cache_(std::exchange(other.cache_, nullptr)), id_(std::exchange(other.id_, -1)) {}
  KvSequence& operator=(KvSequence&& other) noexcept {
    if (this != &other) {
      Reset();
      cache_ = std::exchange(other.cache_, nullptr);
      id_ = std::exchange(other.id_, -1);
    }
    return *this;
  }
  KvSequence(const KvSequence&) = delete;
  KvSequence& operator=(const KvSequence&) = delete;

  bool valid() const { return cache_ != nullptr; }
  model::SequenceId id() const { return id_; }
  // Tokens whose K/V are stored.
  int length() const { return cache_ ? cache_->Length(id_) : 0; }
  // Frees the sequence now (idempotent).
  void Reset() {
    if (cache_ != nullptr) (void)cache_->Free(id_);
    cache_ = nullptr;
    id_ = -1;
  }

 private:
  model::KvCache* cache_ = nullptr;
  model::SequenceId id_ = -1;
};

}  // namespace textgen::server
