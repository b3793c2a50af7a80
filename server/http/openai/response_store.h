#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server::http {

struct ResponseStoreOptions {
  // Bytes of stored responses kept (--responses-store-mb); past it the oldest go first.
  size_t max_bytes = size_t{256} << 20;
  // How long a stored response stays (--responses-ttl).
  absl::Duration ttl = absl::Hours(1);
};

// The Responses API's stored responses (`store: true`), in memory: what GET
// /v1/responses/{id} returns and what `previous_response_id` continues. Each belongs to the
// principal that made it (another principal's id is "not found", as for sessions). Bounded in
// bytes and in age; the oldest entries go first. The KV cache is not kept here: a continuation
// renders the stored conversation again and the prefix cache finds its tokens. Thread-safe.
class ResponseStore {
 public:
  struct Entry {
    std::string response_json;  // the response object as the client received it
    // The conversation without instructions, ending with this response's reply: what a
    // continuation builds on.
    std::vector<v1::ChatMessage> conversation;
  };

  explicit ResponseStore(
      const ResponseStoreOptions& options,
      std::function<absl::Time()> clock = [] { return absl::Now(); });

  // Stores (or replaces) `id`. An entry larger than the whole budget is not kept.
  void Put(absl::string_view principal, absl::string_view id, Entry entry);
  // NOT_FOUND (naming the id) when absent, expired, evicted or another principal's.
  absl::StatusOr<std::shared_ptr<const Entry>> Get(absl::string_view principal,
                                                   absl::string_view id);
  // Whether it was there.
  bool Delete(absl::string_view principal, absl::string_view id);

  size_t bytes() const;
  size_t size() const;

 private:
  using Key = std::pair<std::string, std::string>;  // principal, id
  struct Slot {
    std::shared_ptr<const Entry> entry;
    size_t bytes = 0;
    absl::Time expires;
    std::list<Key>::iterator order;  // in order_
  };
  void EraseLocked(std::map<Key, Slot>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops expired entries and, oldest first, whatever keeps the store over `max_bytes`.
  void TrimLocked(size_t max_bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ResponseStoreOptions options_;
  const std::function<absl::Time()> clock_;
  mutable std::mutex mu_;
  std::map<Key, Slot> entries_ ABSL_GUARDED_BY(mu_);
  std::list<Key> order_ ABSL_GUARDED_BY(mu_);  // oldest first (the TTL is the same for all)
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace textgen::server::http
