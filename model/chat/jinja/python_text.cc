#include "model/chat/jinja/python_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/base/status_macros.h"

namespace textgen::model::jinja {
namespace {

// Python's float repr: shortest round-trip digits, then exponent form when the decimal
// exponent is < -4 or >= 16 ("1e-05", "1e+16"), else positional with at least ".0".
std::string FormatShortest(double value) {
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string sci(buffer, result.ptr);  // "-1.2345e+02"
  const size_t e = sci.find('e');
  const int exponent = std::atoi(sci.c_str() + e + 1);
  std::string mantissa = sci.substr(0, e);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
    absl::StrAppend(&out, "e", exponent < 0 ? "-" : "+",
                    absl::StrFormat("%02d", std::abs(exponent)));
    return out;
  }
  if (exponent < 0) {
    absl::StrAppend(&out, "0.", std::string(-exponent - 1, '0'), digits);
    return out;
  }
  const size_t int_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_digits) {
    absl::StrAppend(&out, digits, std::string(int_digits - digits.size(), '0'), ".0");
  } else {
    absl::StrAppend(&out, digits.substr(0, int_digits), ".", digits.substr(int_digits));
  }
  return out;
}

// A namespace may hold itself (as in Python), so a repr must end on its own: nesting past
// kMaxReprDepth is shown as "..." (Python shows a container inside itself as [...]), and
// past kMaxReprBytes, more than the 8 MiB any string of a chat render may hold, nothing more
// is appended (the render's string limit then refuses the text). Bounds the recursion and the
// work whatever a template builds (the chat-template fuzzer found a namespace holding itself).
constexpr int kMaxReprDepth = 200;
constexpr size_t kMaxReprBytes = size_t{8} << 20;

void AppendRepr(const Value& value, std::string* out, int depth = 0);

void AppendStringRepr(absl::string_view text, std::string* out) {
  // Python picks single quotes unless the text has a ' and no ".
  const bool has_single = text.find('\'') != absl::string_view::npos;
  const bool has_double = text.find('"') != absl::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out->push_back(quote);
  size_t offset = 0;
  while (offset < text.size()) {
    const char32_t c = DecodeCodePoint(text, &offset);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (c < 0x20 || c == 0x7F) {
      absl::StrAppendFormat(out, "\\x%02x", static_cast<unsigned>(c));
    } else if ((c >= 0x80 && c <= 0xA0) || c == 0xAD) {
      // Not printable in Python (C1 controls, no-break space, soft hyphen).
      absl::StrAppendFormat(out, "\\x%02x", static_cast<unsigned>(c));
    } else if (c == 0x2028 || c == 0x2029 || (c >= 0x200B && c <= 0x200F) ||
               (c >= 0x202A && c <= 0x202E) || (c >= 0x2060 && c <= 0x2064) || c == 0xFEFF) {
      absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned>(c));
    } else {
      AppendUtf8(c, out);
    }
  }
  out->push_back(quote);
}

void AppendRepr(const Value& value, std::string* out, int depth) {
  if (out->size() > kMaxReprBytes) return;
  if (depth > kMaxReprDepth) {
    out->append("...");
    return;
  }
  switch (value.kind()) {
    case Value::Kind::kString:
      AppendStringRepr(value.str(), out);
      return;
    case Value::Kind::kList: {
      if (value.is_generator()) {
        out->append("<generator object>");
        return;
      }
      out->push_back(value.is_tuple() ? '(' : '[');
      bool first = true;
      for (const Value& item : value.list()) {
        if (out->size() > kMaxReprBytes) return;
        if (!first) out->append(", ");
        first = false;
        AppendRepr(item, out, depth + 1);
      }
      if (value.is_tuple() && value.list().size() == 1) out->push_back(',');
      out->push_back(value.is_tuple() ? ')' : ']');
      return;
    }
    case Value::Kind::kDict: {
      if (value.is_namespace()) {
        out->append("<Namespace ");
        AppendRepr(Value::MakeDict(value.dict()), out, depth + 1);
        out->push_back('>');
        return;
      }
      out->push_back('{');
      bool first = true;
      for (const auto& [key, item] : value.dict().entries()) {
        if (out->size() > kMaxReprBytes) return;
        if (!first) out->append(", ");
        first = false;
        AppendRepr(key, out, depth + 1);
        out->append(": ");
        AppendRepr(item, out, depth + 1);
      }
      out->push_back('}');
      return;
    }
    default:
      out->append(PyStr(value));
  }
}

void AppendJsonString(absl::string_view text, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    const unsigned char c = static_cast<unsigned char>(ch);
    if (ensure_ascii && c >= 0x80) {
      size_t offset = i;
      const char32_t code_point = DecodeCodePoint(text, &offset);
      i = offset - 1;
      if (code_point >= 0x10000) {  // a UTF-16 surrogate pair, as Python writes it
        const char32_t v = code_point - 0x10000;
        absl::StrAppendFormat(out, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned>(code_point));
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", c);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

absl::Status AppendJson(const Value& value, const JsonOptions& options, int depth,
                        std::string* out);

// A line break and the indentation of `level` (nothing without an indent).
void AppendJsonNewline(const JsonOptions& options, int level, std::string* out) {
  if (!options.indent) return;
  out->push_back('\n');
  out->append(static_cast<size_t>(*options.indent) * level, ' ');
}

// json.dumps' item separator: "," with an indent, ", " without, unless given.
std::string JsonItemSeparator(const JsonOptions& options) {
  if (!options.item_separator.empty()) return options.item_separator;
  return options.indent ? "," : ", ";
}

absl::Status AppendJsonList(const Value& value, const JsonOptions& options, int depth,
                            std::string* out) {
  if (value.is_generator()) {
    return absl::InvalidArgumentError("Object of type generator is not JSON serializable");
  }
  if (value.list().empty()) {
    out->append("[]");
    return absl::OkStatus();
  }
  const std::string item_sep = JsonItemSeparator(options);
  out->push_back('[');
  bool first = true;
  for (const Value& item : value.list()) {
    if (!first) out->append(item_sep);
    first = false;
    AppendJsonNewline(options, depth + 1, out);
    TEXTGEN_RETURN_IF_ERROR(AppendJson(item, options, depth + 1, out));
  }
  AppendJsonNewline(options, depth, out);
  out->push_back(']');
  return absl::OkStatus();
}

// json.dumps writes non-string keys as their JSON text, quoted.
absl::Status AppendJsonKey(const Value& key, const JsonOptions& options, int depth,
                           std::string* out) {
  if (key.is_string()) {
    AppendJsonString(key.str(), options.ensure_ascii, out);
  } else if (key.is_bool() || key.is_none() || key.is_number()) {
    std::string text;
    TEXTGEN_RETURN_IF_ERROR(AppendJson(key, options, depth + 1, &text));
    AppendJsonString(text, options.ensure_ascii, out);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("tojson: keys must be str, int, float, bool or None, not ", key.TypeName()));
  }
  return absl::OkStatus();
}

absl::Status AppendJsonDict(const Value& value, const JsonOptions& options, int depth,
                            std::string* out) {
  if (value.is_namespace()) {
    return absl::InvalidArgumentError("tojson: Object of type Namespace is not JSON serializable");
  }
  if (value.dict().size() == 0) {
    out->append("{}");
    return absl::OkStatus();
  }
  std::vector<const std::pair<Value, Value>*> entries;
  for (const auto& entry : value.dict().entries()) entries.push_back(&entry);
  if (options.sort_keys) {
    std::stable_sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) {
      return a->first.is_string() && b->first.is_string() && a->first.str() < b->first.str();
    });
  }
  const std::string item_sep = JsonItemSeparator(options);
  const std::string key_sep = !options.key_separator.empty() ? options.key_separator : ": ";
  out->push_back('{');
  bool first = true;
  for (const auto* entry : entries) {
    if (!first) out->append(item_sep);
    first = false;
    AppendJsonNewline(options, depth + 1, out);
    TEXTGEN_RETURN_IF_ERROR(AppendJsonKey(entry->first, options, depth, out));
    out->append(key_sep);
    TEXTGEN_RETURN_IF_ERROR(AppendJson(entry->second, options, depth + 1, out));
  }
  AppendJsonNewline(options, depth, out);
  out->push_back('}');
  return absl::OkStatus();
}

absl::Status AppendJson(const Value& value, const JsonOptions& options, int depth,
                        std::string* out) {
  if (depth > 128) return absl::InvalidArgumentError("tojson: value nested too deeply");
  switch (value.kind()) {
    case Value::Kind::kNone:
      out->append("null");
      return absl::OkStatus();
    case Value::Kind::kBool:
      out->append(value.as_bool() ? "true" : "false");
      return absl::OkStatus();
    case Value::Kind::kInt:
      absl::StrAppend(out, value.as_int());
      return absl::OkStatus();
    case Value::Kind::kFloat: {
      const double f = value.as_float();
      if (std::isnan(f)) {
        out->append("NaN");
      } else if (std::isinf(f)) {
        out->append(f > 0 ? "Infinity" : "-Infinity");
      } else {
        out->append(PyFloatRepr(f));
      }
      return absl::OkStatus();
    }
    case Value::Kind::kString:
      AppendJsonString(value.str(), options.ensure_ascii, out);
      return absl::OkStatus();
    case Value::Kind::kList:
      return AppendJsonList(value, options, depth, out);
    case Value::Kind::kDict:
      return AppendJsonDict(value, options, depth, out);
    case Value::Kind::kUndefined:
      return absl::InvalidArgumentError(
          "tojson: Object of type Undefined is not JSON serializable");
    case Value::Kind::kCallable:
      return absl::InvalidArgumentError("tojson: a function is not JSON serializable");
  }
  return absl::OkStatus();
}

// One-to-one case pairs beyond ASCII: Latin-1, Latin Extended-A, Greek, Cyrillic.
char32_t UpperOf(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0xB5) return 0x39C;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 &&
      c != 0x17F) {
    const bool odd_lower = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_lower ? (c % 2 == 0) : (c % 2 == 1)) return c - 1;
    return c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

char32_t LowerOf(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 &&
      c != 0x17F) {
    const bool odd_lower = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_lower ? (c % 2 == 1) : (c % 2 == 0)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

bool IsCased(char32_t c) { return UpperOf(c) != c || LowerOf(c) != c; }

// Stands for "SS" in a mapping result (beyond the Unicode range).
constexpr char32_t kUpperSharpS = 0x110000;

template <typename Map>
std::string MapCodePoints(absl::string_view text, Map map) {
  std::string out;
  out.reserve(text.size());
  size_t offset = 0;
  size_t index = 0;
  bool previous_cased = false;
  while (offset < text.size()) {
    const char32_t c = DecodeCodePoint(text, &offset);
    const char32_t mapped = map(c, index++, previous_cased);
    if (mapped == kUpperSharpS) {
      out.append("SS");  // ß has no one-letter upper case
    } else {
      AppendUtf8(mapped, &out);
    }
    previous_cased = IsCased(c);
  }
  return out;
}

}  // namespace

std::string PyFloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  return FormatShortest(value);
}

std::string PyStr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return value.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return absl::StrCat(value.as_int());
    case Value::Kind::kFloat:
      return PyFloatRepr(value.as_float());
    case Value::Kind::kString:
      return value.str();
    case Value::Kind::kCallable:
      return absl::StrCat("<function ", value.callable().name, ">");
    case Value::Kind::kList:
    case Value::Kind::kDict: {
      std::string out;
      AppendRepr(value, &out);
      return out;
    }
  }
  return "";
}

std::string PyRepr(const Value& value) {
  std::string out;
  AppendRepr(value, &out);
  return out;
}

absl::StatusOr<std::string> PyJsonDumps(const Value& value, const JsonOptions& options) {
  std::string out;
  TEXTGEN_RETURN_IF_ERROR(AppendJson(value, options, 0, &out));
  return out;
}

char32_t DecodeCodePoint(absl::string_view text, size_t* offset) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const size_t i = *offset;
  const unsigned char lead = byte(i);
  int length = 1;
  char32_t c = lead;
  if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    c = lead & 0x07;
  } else if (lead >= 0xE0) {
    length = 3;
    c = lead & 0x0F;
  } else if (lead >= 0xC2 && lead < 0xE0) {
    length = 2;
    c = lead & 0x1F;
  }
  if (length > 1) {
    if (i + length > text.size()) {
      length = 1;
      c = lead;
    } else {
      for (int k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) {
          length = 1;
          c = lead;
          break;
        }
        c = (c << 6) | (byte(i + k) & 0x3F);
      }
    }
  }
  *offset = i + length;
  return c;
}

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::vector<size_t> CodePointStarts(absl::string_view text) {
  std::vector<size_t> starts;
  starts.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    starts.push_back(offset);
    DecodeCodePoint(text, &offset);
  }
  return starts;
}

size_t CodePointCount(absl::string_view text) {
  size_t count = 0;
  for (size_t offset = 0; offset < text.size(); ++count) DecodeCodePoint(text, &offset);
  return count;
}

bool IsPySpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::pair<size_t, size_t> PyStripRange(absl::string_view text,
                                       const std::optional<std::string>& chars, bool left,
                                       bool right) {
  std::vector<char32_t> strip_set;
  if (chars) {
    for (size_t offset = 0; offset < chars->size();) {
      strip_set.push_back(DecodeCodePoint(*chars, &offset));
    }
  }
  const auto strips = [&](char32_t c) {
    return chars ? std::find(strip_set.begin(), strip_set.end(), c) != strip_set.end()
                 : IsPySpace(c);
  };
  // Walk in from both ends (no pass over the whole text: contents can be long).
  size_t begin = 0;
  size_t end = text.size();
  if (left) {
    while (begin < end) {
      size_t next = begin;
      if (!strips(DecodeCodePoint(text, &next))) break;
      begin = next;
    }
  }
  if (right) {
    while (end > begin) {
      // The start of the code point that ends at `end`, as the forward decoder splits it.
      size_t start = end - 1;
      while (start > begin && end - start < 4 &&
             (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
        --start;
      }
      size_t decoded_end = start;
      char32_t c = DecodeCodePoint(text, &decoded_end);
      if (decoded_end != end) {  // not one whole character: the last byte stands alone
        start = end - 1;
        decoded_end = start;
        c = DecodeCodePoint(text, &decoded_end);
      }
      if (!strips(c)) break;
      end = start;
    }
  }
  return {begin, end};
}

std::string PyUpper(absl::string_view text) {
  return MapCodePoints(
      text, [](char32_t c, size_t, bool) { return c == 0xDF ? kUpperSharpS : UpperOf(c); });
}

std::string PyLower(absl::string_view text) {
  return MapCodePoints(text, [](char32_t c, size_t, bool) { return LowerOf(c); });
}

std::string PyTitle(absl::string_view text) {
  return MapCodePoints(text, [](char32_t c, size_t, bool previous_cased) {
    return previous_cased ? LowerOf(c) : UpperOf(c);
  });
}

std::string PyCapitalize(absl::string_view text) {
  return MapCodePoints(
      text, [](char32_t c, size_t index, bool) { return index == 0 ? UpperOf(c) : LowerOf(c); });
}

}  // namespace textgen::model::jinja
