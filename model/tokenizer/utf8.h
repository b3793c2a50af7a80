#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace textgen::model {

// UTF-8 helpers (strict: no overlong forms, surrogates or code points above U+10FFFF).
// Pure functions; thread-safe.

// What the bytes at the start of a buffer hold.
struct Utf8Prefix {
  enum Kind {
    kChar,        // a complete, valid character of `length` bytes
    kInvalid,     // `length` bytes (>= 1) that can never start a valid character; they stand
                  // for one U+FFFD (Unicode's "maximal subpart" rule)
    kIncomplete,  // all `length` bytes are a valid start of a character that needs more bytes
  };
  Kind kind;
  int length;
};

// Classifies the first character of a non-empty `bytes`.
Utf8Prefix NextUtf8Prefix(std::string_view bytes);

// Byte offset of the first invalid or truncated sequence in `text`, or npos when all of it
// is valid (used for error messages that point at the bad byte).
size_t FirstInvalidUtf8(std::string_view text);

// OK when `text` is valid UTF-8; otherwise INVALID_ARGUMENT naming `what` and the first bad
// byte: "<what> is not valid UTF-8 (invalid byte 0xC3 at byte offset 12)". The one check and
// message for text from outside (requests, the CLI's input).
absl::Status CheckUtf8(absl::string_view text, absl::string_view what);

// True when `text` is entirely valid UTF-8 (the empty string is valid).
bool IsValidUtf8(std::string_view text);

// Replaces each invalid or truncated sequence by U+FFFD ("\xEF\xBF\xBD").
std::string SanitizeUtf8(std::string_view text);

// Splits `bytes` into a prefix that is final (complete characters, invalid bytes already
// replaced by U+FFFD) and the length of a trailing incomplete character that later bytes
// may still complete. Appends the final text to `out` and returns the held-back length.
size_t AppendCompleteUtf8(std::string_view bytes, std::string* out);

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

}  // namespace textgen::model
