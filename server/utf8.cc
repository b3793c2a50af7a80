#include "server/utf8.h"

#include <cstdint>

namespace textgen::server {
namespace {

// Length of the valid UTF-8 character starting at text[i], or 0 if it is invalid.
size_t ValidCharLength(absl::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t length;
  uint32_t min_code_point;
  uint32_t code_point;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2, min_code_point = 0x80, code_point = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, min_code_point = 0x800, code_point = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, min_code_point = 0x10000, code_point = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  if (code_point < min_code_point || code_point > 0x10FFFF) return 0;
  if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;
  return length;
}

}  // namespace

size_t FirstInvalidUtf8(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t length = ValidCharLength(text, i);
    if (length == 0) return i;
    i += length;
  }
  return absl::string_view::npos;
}

std::string SanitizeUtf8(absl::string_view text) {
  if (FirstInvalidUtf8(text) == absl::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    const size_t length = ValidCharLength(text, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.data() + i, length);
      i += length;
    }
  }
  return out;
}

}  // namespace textgen::server
