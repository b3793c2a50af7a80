#pragma once

// Sets of Unicode code points as grammar symbols: each set becomes the UTF-8 byte sequences
// that encode it (surrogates excluded). In a JSON string, characters JSON must escape (`"`,
// `\` and controls) are matched in their escaped forms instead, so a regex or a format inside
// a string constrains the decoded text.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/constraint/grammar.h"

namespace textgen::model {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

class CodepointSet {
 public:
  void Add(uint32_t lo, uint32_t hi);
  void Add(uint32_t cp) { Add(cp, cp); }
  void AddSet(const CodepointSet& other);
  // Everything in [0, kMaxCodepoint] not in this set.
  CodepointSet Complement() const;
  bool Empty() const { return ranges_.empty(); }
  bool Contains(uint32_t cp) const;
  // Sorted, disjoint, non-adjacent ranges.
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const;

 private:
  mutable std::vector<std::pair<uint32_t, uint32_t>> ranges_;
  mutable bool normalized_ = true;
};

enum class TextContext { kRaw, kJsonString };

// A symbol matching one character of `set` (a single byte set when it fits one, else a rule).
Symbol CharSymbol(GrammarBuilder& builder, const CodepointSet& set, TextContext context);

// The UTF-8 encoding of `cp`.
void AppendUtf8(uint32_t cp, std::string& out);

// The code point whose UTF-8 encoding starts at text[pos], advancing pos past it; nullopt
// (pos unchanged) when the bytes there are not UTF-8. The regex and GBNF parsers read with it.
std::optional<uint32_t> DecodeUtf8(std::string_view text, size_t& pos);
// The UTF-8 encodings of every non-ASCII scalar value as sequences of byte ranges (a lead
// range, then one range per continuation byte; lead ranges are disjoint): the shapes a
// multi-byte character takes in strictly valid UTF-8.
using Utf8Shape = std::vector<std::pair<uint8_t, uint8_t>>;
const std::vector<Utf8Shape>& MultibyteUtf8Shapes();

// `digits` hex digits at text[pos] as a code point, advancing pos past them; nullopt when
// they are not all there or name a value past kMaxCodepoint.
std::optional<uint32_t> DecodeHex(std::string_view text, size_t& pos, int digits);

}  // namespace textgen::model
