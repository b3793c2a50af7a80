#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/scheduler/kv_sequence.h"

namespace textgen::server {

// A KV sequence that outlives the request that filled it, named by the client.
struct Session {
  std::string id;
  std::string principal;    // who made it (empty without API keys)
  KvSequence kv;            // lent to the running request while busy (then invalid here)
  std::vector<int> tokens;  // the tokens whose K/V `kv` holds, in order
  absl::Time last_used = absl::InfinitePast();
  bool busy = false;  // a request is running on it; never evicted or expired then
};

// The sessions of one scheduler, with TTL expiry and LRU eviction of idle sessions.
// Engine thread only (not thread-safe); the scheduler's engine thread owns it.
class SessionStore {
 public:
  SessionStore(int max_sessions, absl::Duration ttl);
  // `max_per_principal`: sessions one principal may keep (0 = no limit of its own).
  SessionStore(int max_sessions, int max_per_principal, absl::Duration ttl);

  // The session named `id`, or null.
  Session* Find(const std::string& id);
  // Adds an empty idle session. When the store is full the least recently used idle session
  // is evicted first (*evicted counts it); RESOURCE_EXHAUSTED when every session is busy.
  // Likewise per principal: at its limit, its own least recently used idle session goes.
  absl::StatusOr<Session*> Create(const std::string& id, absl::Time now, int* evicted,
                                  const std::string& principal = "");
  // Removes an idle session and returns how many cached tokens it freed. NOT_FOUND if
  // unknown, FAILED_PRECONDITION while a request runs on it.
  absl::StatusOr<int> Erase(const std::string& id);
  // Drops idle sessions unused for longer than the TTL; returns how many.
  int ExpireIdle(absl::Time now);
  // Evicts the least recently used idle session other than `keep`; false if there is none.
  bool EvictLru(const std::string& keep);
  // Bytes that evicting every idle session other than `keep` would free (blocks they share
  // with running requests stay).
  int64_t IdleBytes(const model::KvCache& cache, const std::string& keep) const;
  // When the next idle session expires, if any.
  std::optional<absl::Time> NextExpiry() const;
  // Frees everything (shutdown).
  void Clear() { sessions_.clear(); }

  int size() const { return static_cast<int>(sessions_.size()); }

 private:
  // Evicts `principal`'s least recently used idle session; false if it has none.
  bool EvictLruOf(const std::string& principal);
  int CountOf(const std::string& principal) const;

  int max_sessions_;
  int max_per_principal_ = 0;
  absl::Duration ttl_;
  // unique_ptr: Session* handed out stays valid while other sessions come and go.
  absl::flat_hash_map<std::string, std::unique_ptr<Session>> sessions_;
};

}  // namespace textgen::server
