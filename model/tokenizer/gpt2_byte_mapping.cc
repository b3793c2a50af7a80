#include "model/tokenizer/gpt2_byte_mapping.h"

#include <cstdint>

#include "model/tokenizer/utf8.h"

namespace textgen::model {
namespace {

bool IsSelfMapped(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

std::string EncodeCodePoint(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else {  // the table only holds code points below U+0800
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return out;
}

// Code point -> byte for the table's code points (all below U+0144); -1 elsewhere.
std::array<int, 0x144> BuildInverse() {
  std::array<int, 0x144> inverse;
  inverse.fill(-1);
  int next = 0;
  for (int byte = 0; byte < 256; ++byte) {
    inverse[IsSelfMapped(byte) ? byte : 0x100 + next++] = byte;
  }
  return inverse;
}

}  // namespace

const std::array<std::string, 256>& Gpt2ByteToUnicode() {
  // Immutable after first use (thread-safe static initialisation).
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    int next = 0;
    for (int byte = 0; byte < 256; ++byte) {
      t[byte] = EncodeCodePoint(IsSelfMapped(byte) ? byte : 0x100 + next++);
    }
    return t;
  }();
  return table;
}

std::optional<std::string> Gpt2UnicodeToBytes(std::string_view token) {
  static const std::array<int, 0x144> inverse = BuildInverse();
  std::string out;
  out.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    const Utf8Prefix prefix = NextUtf8Prefix(token.substr(pos));
    if (prefix.kind != Utf8Prefix::kChar || prefix.length > 2) return std::nullopt;
    uint32_t cp = static_cast<unsigned char>(token[pos]);
    if (prefix.length == 2) cp = ((cp & 0x1F) << 6) | (token[pos + 1] & 0x3F);
    if (cp >= inverse.size() || inverse[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(inverse[cp]));
    pos += prefix.length;
  }
  return out;
}

}  // namespace textgen::model
