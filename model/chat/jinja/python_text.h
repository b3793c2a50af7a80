#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/chat/jinja/value.h"

// How Python prints values and handles Unicode text: templates are written against Python's
// behaviour (str(), repr(), json.dumps, str.strip, len), and rendering must match it byte for
// byte.
namespace textgen::model::jinja {

// repr(float): the shortest text that reads back to the same double ("0.1", "1e+16", "inf").
std::string PyFloatRepr(double value);
// str(value) as `{{ value }}` prints it ("None", "True", "[1, 'a']"); Undefined prints "".
std::string PyStr(const Value& value);
// repr(value) ("'it\\'s'", "{'a': 1}").
std::string PyRepr(const Value& value);

struct JsonOptions {
  std::optional<int> indent;  // none = one line
  // json.dumps separators; empty = Python's defaults (", " and ": ", or "," with an indent).
  std::string item_separator;
  std::string key_separator;
  bool sort_keys = false;
  bool ensure_ascii = false;  // escape non-ASCII as \uXXXX
};
// json.dumps(value, ...): what Hugging Face's `tojson` filter returns.
absl::StatusOr<std::string> PyJsonDumps(const Value& value, const JsonOptions& options);

// UTF-8 decoding by code point: Python indexes, slices and measures strings in code points.
// Invalid bytes count as one code point each (inputs are validated before rendering).
std::vector<size_t> CodePointStarts(absl::string_view text);  // byte offset of each code point
size_t CodePointCount(absl::string_view text);
char32_t DecodeCodePoint(absl::string_view text, size_t* offset);
void AppendUtf8(char32_t code_point, std::string* out);

// str.isspace() for one code point (Unicode White_Space plus the ASCII separators 0x1c-0x1f).
bool IsPySpace(char32_t code_point);
// The byte range str.strip(chars) keeps; chars = nullopt strips whitespace.
std::pair<size_t, size_t> PyStripRange(absl::string_view text,
                                       const std::optional<std::string>& chars, bool left,
                                       bool right);
// str.upper() / str.lower() / str.title() / str.capitalize(): ASCII and Latin-1, Greek and
// Cyrillic letters (the simple one-to-one case mappings); other characters are unchanged.
std::string PyUpper(absl::string_view text);
std::string PyLower(absl::string_view text);
std::string PyTitle(absl::string_view text);
std::string PyCapitalize(absl::string_view text);

}  // namespace textgen::model::jinja
