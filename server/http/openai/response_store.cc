#include "server/http/openai/response_store.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace textgen::server::http {
namespace {

// What an entry holds, roughly as the heap holds it.
size_t EntryBytes(const ResponseStore::Entry& entry) {
  size_t bytes = sizeof(entry) + entry.response_json.size();
  for (const v1::ChatMessage& m : entry.conversation) bytes += sizeof(m) + m.ByteSizeLong();
  return bytes;
}

}  // namespace

ResponseStore::ResponseStore(const ResponseStoreOptions& options, std::function<absl::Time()> clock)
    : options_(options), clock_(std::move(clock)) {}

void ResponseStore::Put(absl::string_view principal, absl::string_view id, Entry entry) {
  const size_t bytes = EntryBytes(entry);
  Key key{std::string(principal), std::string(id)};
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) EraseLocked(it);
  if (bytes > options_.max_bytes) return;
  TrimLocked(options_.max_bytes - bytes);
  order_.push_back(key);
  Slot slot{std::make_shared<const Entry>(std::move(entry)), bytes, clock_() + options_.ttl,
            std::prev(order_.end())};
  entries_.emplace(std::move(key), std::move(slot));
  bytes_ += bytes;
}

absl::StatusOr<std::shared_ptr<const ResponseStore::Entry>> ResponseStore::Get(
    absl::string_view principal, absl::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  TrimLocked(options_.max_bytes);
  const auto it = entries_.find(Key{std::string(principal), std::string(id)});
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "no stored response '", id.substr(0, 64),
        "' (responses are kept in memory for a limited time, and only with store: true)"));
  }
  return it->second.entry;
}

bool ResponseStore::Delete(absl::string_view principal, absl::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = entries_.find(Key{std::string(principal), std::string(id)});
  if (it == entries_.end()) return false;
  EraseLocked(it);
  return true;
}

size_t ResponseStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void ResponseStore::EraseLocked(std::map<Key, Slot>::iterator it) {
  bytes_ -= it->second.bytes;
  order_.erase(it->second.order);
  entries_.erase(it);
}

void ResponseStore::TrimLocked(size_t max_bytes) {
  const absl::Time now = clock_();
  while (!order_.empty()) {
    const auto it = entries_.find(order_.front());
    if (it->second.expires > now && bytes_ <= max_bytes) break;
    EraseLocked(it);
  }
}

}  // namespace textgen::server::http
