#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace textgen::model {

// GPT-2's bytes_to_unicode(): each byte maps to a printable code point (bytes that are
// printable Latin-1 map to themselves, the other 68 to U+0100 + k). Returns the UTF-8 text
// of the code point for every byte.
const std::array<std::string, 256>& Gpt2ByteToUnicode();

// Inverse mapping for a whole token string; nullopt when a character is not in the table.
std::optional<std::string> Gpt2UnicodeToBytes(std::string_view token);

}  // namespace textgen::model
