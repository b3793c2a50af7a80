#include "server/scheduler/session_store.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace textgen::server {

SessionStore::SessionStore(int max_sessions, absl::Duration ttl)
    : max_sessions_(max_sessions), ttl_(ttl) {}

SessionStore::SessionStore(int max_sessions, int max_per_principal, absl::Duration ttl)
    : max_sessions_(max_sessions), max_per_principal_(max_per_principal), ttl_(ttl) {}

int SessionStore::CountOf(const std::string& principal) const {
  int count = 0;
  for (const auto& [id, s] : sessions_) count += s->principal == principal;
  return count;
}

bool SessionStore::EvictLruOf(const std::string& principal) {
  auto victim = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    const Session& s = *it->second;
    if (s.busy || s.principal != principal) continue;
    if (victim == sessions_.end() || s.last_used < victim->second->last_used) victim = it;
  }
  if (victim == sessions_.end()) return false;
  sessions_.erase(victim);
  return true;
}

Session* SessionStore::Find(const std::string& id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

absl::StatusOr<Session*> SessionStore::Create(const std::string& id, absl::Time now, int* evicted,
                                              const std::string& principal) {
  if (max_per_principal_ > 0 && !principal.empty()) {
    for (int count = CountOf(principal); count >= max_per_principal_; --count) {
      if (!EvictLruOf(principal)) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "principal ", principal, " keeps ", count,
            " sessions, all busy (max_sessions_per_principal ", max_per_principal_, ")"));
      }
      ++*evicted;
    }
  }
  while (size() >= max_sessions_) {
    if (!EvictLru(/*keep=*/"")) {
      return absl::ResourceExhaustedError(absl::StrCat("session ", id, ": all ", max_sessions_,
                                                       " sessions (max_sessions) are busy"));
    }
    ++*evicted;
  }
  auto session = std::make_unique<Session>();
  session->id = id;
  session->principal = principal;
  session->last_used = now;
  Session* raw = session.get();
  sessions_[id] = std::move(session);
  return raw;
}

absl::StatusOr<int> SessionStore::Erase(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return absl::NotFoundError(absl::StrCat("session ", id, " not found"));
  if (it->second->busy) {
    return absl::FailedPreconditionError(
        absl::StrCat("session ", id, " is busy: a request is running on it"));
  }
  int freed = it->second->kv.length();
  sessions_.erase(it);
  return freed;
}

int SessionStore::ExpireIdle(absl::Time now) {
  int expired = 0;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const Session& s = *it->second;
    if (!s.busy && now - s.last_used >= ttl_) {
      sessions_.erase(it++);
      ++expired;
    } else {
      ++it;
    }
  }
  return expired;
}

bool SessionStore::EvictLru(const std::string& keep) {
  auto victim = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    const Session& s = *it->second;
    if (s.busy || s.id == keep) continue;
    if (victim == sessions_.end() || s.last_used < victim->second->last_used) victim = it;
  }
  if (victim == sessions_.end()) return false;
  sessions_.erase(victim);
  return true;
}

int64_t SessionStore::IdleBytes(const model::KvCache& cache, const std::string& keep) const {
  std::vector<model::SequenceId> idle;
  for (const auto& [id, s] : sessions_) {
    if (s->busy || id == keep || !s->kv.valid()) continue;
    idle.push_back(s->kv.id());
  }
  return cache.BytesFreedByDropping(idle);
}

std::optional<absl::Time> SessionStore::NextExpiry() const {
  std::optional<absl::Time> next;
  for (const auto& [id, s] : sessions_) {
    if (s->busy) continue;
    absl::Time t = s->last_used + ttl_;
    if (!next || t < *next) next = t;
  }
  return next;
}

}  // namespace textgen::server
