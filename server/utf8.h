#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace textgen::server {

// Byte offset of the first invalid UTF-8 sequence in `text`, or npos when all of it is valid
// (overlong forms, surrogates and code points past U+10FFFF are invalid). Thread-safe.
size_t FirstInvalidUtf8(absl::string_view text);

// `text` with every invalid sequence replaced by U+FFFD, so it can go into a proto3 string.
std::string SanitizeUtf8(absl::string_view text);

}  // namespace textgen::server
