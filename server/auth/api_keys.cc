#include "server/auth/api_keys.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace textgen::server::auth {
namespace {

std::array<uint8_t, 32> Digest(absl::string_view key) {
  std::array<uint8_t, 32> digest;
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest.data());
  return digest;
}

bool ValidPrincipal(absl::string_view principal) {
  if (principal.empty() || principal.size() > 64) return false;
  for (const char c : principal) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '@' &&
        c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<ApiKeys> ApiKeys::Parse(absl::string_view text, absl::string_view source) {
  ApiKeys keys;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const auto where = [&] { return absl::StrCat(source, " line ", line_number, ": "); };
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "expected 'PRINCIPAL KEY', got ", fields.size(), " fields"));
    }
    const absl::string_view principal = fields[0];
    const absl::string_view key = fields[1];
    if (!ValidPrincipal(principal)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "principal must be 1..64 characters of [A-Za-z0-9._@-]"));
    }
    if (key.size() < kMinApiKeyLength) {
      return absl::InvalidArgumentError(absl::StrCat(where(), "the key of '", principal, "' is ",
                                                     key.size(), " characters; at least ",
                                                     kMinApiKeyLength, " are required"));
    }
    for (const char c : key) {
      if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7E) {
        return absl::InvalidArgumentError(absl::StrCat(
            where(), "the key of '", principal, "' has a character outside printable ASCII"));
      }
    }
    Entry entry{std::string(principal), Digest(key)};
    for (const Entry& existing : keys.entries_) {
      if (existing.digest == entry.digest) {
        return absl::InvalidArgumentError(
            absl::StrCat(where(), "this key is already given to '", existing.principal, "'"));
      }
    }
    keys.entries_.push_back(std::move(entry));
  }
  if (keys.entries_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": no keys (lines 'PRINCIPAL KEY')"));
  }
  return keys;
}

absl::StatusOr<ApiKeys> ApiKeys::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("--api-keys-file ", path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), absl::StrCat("--api-keys-file ", path));
}

std::optional<std::string> ApiKeys::Find(absl::string_view key) const {
  const std::array<uint8_t, 32> digest = Digest(key);
  const Entry* found = nullptr;
  // Every entry is compared, whatever matched: the time does not depend on which key it is.
  for (const Entry& entry : entries_) {
    if (CRYPTO_memcmp(entry.digest.data(), digest.data(), digest.size()) == 0) found = &entry;
  }
  if (found == nullptr) return std::nullopt;
  return found->principal;
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Create(const std::string& keys_file) {
  absl::StatusOr<ApiKeys> keys = ApiKeys::Load(keys_file);
  if (!keys.ok()) return keys.status();
  return std::unique_ptr<Authenticator>(new Authenticator(keys_file, *std::move(keys)));
}

Authenticator::Authenticator(std::string path, ApiKeys keys)
    : path_(std::move(path)), keys_(std::make_shared<const ApiKeys>(std::move(keys))) {}

absl::StatusOr<std::string> Authenticator::Authenticate(absl::string_view authorization) const {
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "missing API key: send the header 'authorization: Bearer KEY'");
  }
  absl::string_view key = authorization;
  if (!absl::ConsumePrefix(&key, "Bearer ") && !absl::ConsumePrefix(&key, "bearer ")) {
    return absl::UnauthenticatedError("the authorization header must be 'Bearer KEY'");
  }
  key = absl::StripAsciiWhitespace(key);
  std::shared_ptr<const ApiKeys> keys;
  {
    absl::MutexLock lock(&mu_);
    keys = keys_;
  }
  std::optional<std::string> principal = keys->Find(key);
  if (!principal) return absl::UnauthenticatedError("invalid API key");
  return *std::move(principal);
}

absl::Status Authenticator::Reload() {
  absl::StatusOr<ApiKeys> keys = ApiKeys::Load(path_);
  if (!keys.ok()) return keys.status();
  auto fresh = std::make_shared<const ApiKeys>(*std::move(keys));
  absl::MutexLock lock(&mu_);
  keys_ = std::move(fresh);
  return absl::OkStatus();
}

size_t Authenticator::key_count() const {
  absl::MutexLock lock(&mu_);
  return keys_->size();
}

}  // namespace textgen::server::auth
