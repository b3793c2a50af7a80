#include "model/tokenizer/utf8.h"

#include "absl/strings/str_format.h"

namespace textgen::model {

Utf8Prefix NextUtf8Prefix(std::string_view bytes) {
  const auto lead = static_cast<unsigned char>(bytes[0]);
  if (lead < 0x80) return {Utf8Prefix::kChar, 1};
  // Sequence length and the allowed range of the second byte (Unicode Table 3-7).
  int length = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) lo = 0xA0;  // no overlong 3-byte forms
    if (lead == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) lo = 0x90;  // no overlong 4-byte forms
    if (lead == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {Utf8Prefix::kInvalid, 1};  // continuation byte, C0/C1 or F5..FF
  }
  for (int i = 1; i < length; ++i) {
    if (static_cast<size_t>(i) >= bytes.size()) return {Utf8Prefix::kIncomplete, i};
    const auto byte = static_cast<unsigned char>(bytes[i]);
    const bool ok = i == 1 ? (byte >= lo && byte <= hi) : (byte >= 0x80 && byte <= 0xBF);
    if (!ok) return {Utf8Prefix::kInvalid, i};
  }
  return {Utf8Prefix::kChar, length};
}

size_t FirstInvalidUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // ASCII fast path: most text is plain ASCII.
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const Utf8Prefix prefix = NextUtf8Prefix(text.substr(pos));
    if (prefix.kind != Utf8Prefix::kChar) return pos;
    pos += prefix.length;
  }
  return std::string_view::npos;
}

bool IsValidUtf8(std::string_view text) { return FirstInvalidUtf8(text) == std::string_view::npos; }

size_t AppendCompleteUtf8(std::string_view bytes, std::string* out) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const Utf8Prefix prefix = NextUtf8Prefix(bytes.substr(pos));
    switch (prefix.kind) {
      case Utf8Prefix::kChar:
        out->append(bytes.substr(pos, prefix.length));
        break;
      case Utf8Prefix::kInvalid:
        out->append(kReplacementCharacter);
        break;
      case Utf8Prefix::kIncomplete:
        return bytes.size() - pos;  // only possible at the very end
    }
    pos += prefix.length;
  }
  return 0;
}

absl::Status CheckUtf8(absl::string_view text, absl::string_view what) {
  const size_t bad = FirstInvalidUtf8(std::string_view(text.data(), text.size()));
  if (bad == std::string_view::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("%s is not valid UTF-8 (invalid byte 0x%02X at byte offset %d)", what,
                      static_cast<unsigned char>(text[bad]), bad));
}

std::string SanitizeUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const size_t held = AppendCompleteUtf8(text, &out);
  if (held > 0) out.append(kReplacementCharacter);  // truncated at the end: cannot complete
  return out;
}

}  // namespace textgen::model
