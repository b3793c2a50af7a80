#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace textgen::server::auth {

// Shortest key accepted: shorter ones are guessable.
inline constexpr size_t kMinApiKeyLength = 16;

// The keys of an --api-keys-file: one "PRINCIPAL KEY" per line ('#' starts a comment). Only
// SHA-256 digests of the keys are kept, and a lookup compares the presented key's digest with
// every stored one in constant time, so neither timing nor a memory dump gives a key away.
class ApiKeys {
 public:
  // INVALID_ARGUMENT naming `source` and the line: a malformed line, a principal outside
  // [A-Za-z0-9._@-] (1..64 characters), a key shorter than kMinApiKeyLength or with spaces or
  // control characters, a key given twice, or no key at all. Messages never contain a key.
  static absl::StatusOr<ApiKeys> Parse(absl::string_view text, absl::string_view source);
  // Parse() of a file's contents; NOT_FOUND when it cannot be read.
  static absl::StatusOr<ApiKeys> Load(const std::string& path);

  // The principal `key` belongs to, or nullopt.
  std::optional<std::string> Find(absl::string_view key) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string principal;
    std::array<uint8_t, 32> digest;
  };
  std::vector<Entry> entries_;
};

// Who is calling, from an "authorization: Bearer KEY" header (gRPC metadata or HTTP). The keys
// are reloaded from their file on demand (SIGHUP) without disturbing requests already admitted.
// Thread-safe.
class Authenticator {
 public:
  static absl::StatusOr<std::unique_ptr<Authenticator>> Create(const std::string& keys_file);

  // The principal, or UNAUTHENTICATED saying what is wrong (never echoing the key).
  absl::StatusOr<std::string> Authenticate(absl::string_view authorization) const;
  // Re-reads the file; on error keeps the current keys and returns the error.
  absl::Status Reload();
  size_t key_count() const;

 private:
  explicit Authenticator(std::string path, ApiKeys keys);
  const std::string path_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const ApiKeys> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace textgen::server::auth
