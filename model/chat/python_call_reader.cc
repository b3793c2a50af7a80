#include "model/chat/python_call_reader.h"

#include <cstdint>

#include "model/chat/xml_call_reader.h"
#include "nlohmann/json.hpp"

namespace textgen::model {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

constexpr int kMaxLiteralDepth = 64;

// Recursive descent over one literal; `at` moves past what was read.
class LiteralReader {
 public:
  explicit LiteralReader(std::string_view text) : text_(text) {}

  std::optional<std::string> Whole() {
    std::string out;
    if (!Value(out, 0)) return std::nullopt;
    SkipSpace();
    if (at_ != text_.size()) return std::nullopt;
    return out;
  }

 private:
  void SkipSpace() {
    while (at_ < text_.size() && IsSpace(text_[at_])) ++at_;
  }
  bool Consume(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  bool Value(std::string& out, int depth) {
    if (depth > kMaxLiteralDepth) return false;
    SkipSpace();
    if (at_ >= text_.size()) return false;
    const char c = text_[at_];
    if (c == '\'' || c == '"') return String(out);
    if (c == '[' || c == '(') return Sequence(out, depth, c == '[' ? ']' : ')');
    if (c == '{') return Dict(out, depth);
    for (const auto& [word, json] : {std::pair{"True", "true"},
                                     {"False", "false"},
                                     {"None", "null"},
                                     {"true", "true"},
                                     {"false", "false"},
                                     {"null", "null"}}) {
      if (Consume(word)) {
        if (at_ < text_.size() && IsNameChar(text_[at_])) return false;
        out += json;
        return true;
      }
    }
    return Number(out);
  }

  bool Number(std::string& out) {
    const size_t start = at_;
    while (at_ < text_.size() && (IsNameChar(text_[at_]) || text_[at_] == '+')) ++at_;
    const std::string_view number = text_.substr(start, at_ - start);
    // JSON's number grammar (Python's 1. or .5 are refused rather than guessed at).
    const nlohmann::json parsed = nlohmann::json::parse(number, nullptr, false);
    if (number.empty() || parsed.is_discarded() || !parsed.is_number()) return false;
    out += number;
    return true;
  }

  bool String(std::string& out) {
    const char quote = text_[at_++];
    std::string value;
    while (at_ < text_.size() && text_[at_] != quote) {
      char c = text_[at_++];
      if (c != '\\') {
        value += c;
        continue;
      }
      if (at_ >= text_.size()) return false;
      c = text_[at_++];
      switch (c) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'v':
          value += '\v';
          break;
        case 'a':
          value += '\a';
          break;
        case '0':
          value += '\0';
          break;
        case '/':
          value += '/';
          break;  // JSON's escape (the constraint writes JSON strings)
        case '\\':
        case '\'':
        case '"':
          value += c;
          break;
        case 'x':
        case 'u': {
          std::optional<uint32_t> cp = Hex(c == 'x' ? 2 : 4);
          if (!cp) return false;
          if (*cp >= 0xD800 && *cp <= 0xDBFF) {  // JSON writes U+10000 and up as a pair
            if (!Consume("\\u")) return false;
            const std::optional<uint32_t> low = Hex(4);
            if (!low || *low < 0xDC00 || *low > 0xDFFF) return false;
            *cp = 0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00);
          } else if (*cp >= 0xDC00 && *cp <= 0xDFFF) {
            return false;
          }
          AppendUtf8(*cp, value);
          break;
        }
        default:  // Python keeps an unknown escape as written
          value += '\\';
          value += c;
      }
    }
    if (at_ >= text_.size()) return false;
    ++at_;  // the closing quote
    out += '"';
    AppendJsonStringChars(value, out);
    out += '"';
    return true;
  }

  bool Sequence(std::string& out, int depth, char close) {
    ++at_;
    out += '[';
    SkipSpace();
    bool first = true;
    while (true) {
      SkipSpace();
      if (at_ < text_.size() && text_[at_] == close) {
        ++at_;
        out += ']';
        return true;
      }
      if (!first) {
        if (!Consume(",")) return false;
        SkipSpace();
        if (at_ < text_.size() && text_[at_] == close) continue;  // a trailing comma
        out += ", ";
      }
      if (!Value(out, depth + 1)) return false;
      first = false;
    }
  }

  bool Dict(std::string& out, int depth) {
    ++at_;
    out += '{';
    bool first = true;
    while (true) {
      SkipSpace();
      if (Consume("}")) {
        out += '}';
        return true;
      }
      if (!first) {
        if (!Consume(",")) return false;
        SkipSpace();
        if (Consume("}")) {
          out += '}';
          return true;
        }
        out += ", ";
      }
      SkipSpace();
      if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) return false;
      if (!String(out)) return false;
      SkipSpace();
      if (!Consume(":")) return false;
      out += ": ";
      if (!Value(out, depth + 1)) return false;
      first = false;
    }
  }

  // `digits` hex digits as a number.
  std::optional<uint32_t> Hex(int digits) {
    if (at_ + digits > text_.size()) return std::nullopt;
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = text_[at_++];
      value <<= 4;
      if (h >= '0' && h <= '9') {
        value |= h - '0';
      } else if (h >= 'a' && h <= 'f') {
        value |= h - 'a' + 10;
      } else if (h >= 'A' && h <= 'F') {
        value |= h - 'A' + 10;
      } else {
        return std::nullopt;
      }
    }
    return value;
  }

  static void AppendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string_view text_;
  size_t at_ = 0;
};

}  // namespace

std::optional<std::string> PythonLiteralToJson(std::string_view text) {
  return LiteralReader(text).Whole();
}

ToolCallReader::Step PythonCallReader::Push(char c) {
  switch (state_) {
    case State::kName:
      if (token_.empty() && IsSpace(c)) return Step::kMore;
      if (c == '(') {
        if (token_.empty()) return Step::kError;
        name_ = std::move(token_);
        token_.clear();
        state_ = State::kKeyOrClose;
        return Step::kMore;
      }
      if (!IsNameChar(c) || token_.size() >= kMaxNameBytes) return Step::kError;
      token_ += c;
      return Step::kMore;
    case State::kKeyOrClose:
      if (IsSpace(c)) return Step::kMore;
      if (c == ')') {
        arguments_ += arguments_count_ == 0 ? "{}" : "}";
        state_ = State::kDone;
        return Step::kDone;
      }
      state_ = State::kKey;
      return Push(c);
    case State::kKey:
      if (c == '=' || IsSpace(c)) {
        if (token_.empty()) return Step::kError;
        arguments_ += arguments_count_++ == 0 ? "{\"" : ", \"";
        AppendJsonStringChars(token_, arguments_);
        arguments_ += "\": ";
        token_.clear();
        state_ = State::kEquals;
        return c == '=' ? Push(c) : Step::kMore;
      }
      if (!IsNameChar(c) || token_.size() >= kMaxNameBytes) return Step::kError;
      token_ += c;
      return Step::kMore;
    case State::kEquals:
      if (IsSpace(c)) return Step::kMore;
      if (c != '=') return Step::kError;
      raw_value_.clear();
      depth_ = 0;
      quote_ = 0;
      escape_ = false;
      state_ = State::kValue;
      return Step::kMore;
    case State::kValue:
      return Value(c);
    case State::kAfterValue:
      if (IsSpace(c)) return Step::kMore;
      if (c == ',') {
        state_ = State::kKeyOrClose;
        return Step::kMore;
      }
      if (c == ')') {
        state_ = State::kKeyOrClose;
        return Push(c);
      }
      return Step::kError;
    case State::kDone:
      return Step::kError;
  }
  return Step::kError;
}

ToolCallReader::Step PythonCallReader::Value(char c) {
  if (quote_ != 0) {
    raw_value_ += c;
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == quote_) {
      quote_ = 0;
    }
    return Step::kMore;
  }
  if (depth_ == 0 && (c == ',' || c == ')')) {
    if (!EndValue()) return Step::kError;
    state_ = State::kAfterValue;
    return Push(c);
  }
  if (c == '\'' || c == '"') quote_ = c;
  if (c == '[' || c == '(' || c == '{') {
    if (++depth_ > kMaxLiteralDepth) return Step::kError;
  }
  if (c == ']' || c == '}' || c == ')') {
    if (--depth_ < 0) return Step::kError;
  }
  raw_value_ += c;
  return Step::kMore;
}

bool PythonCallReader::EndValue() {
  std::optional<std::string> json = PythonLiteralToJson(raw_value_);
  if (!json) return false;
  arguments_ += *json;
  return true;
}

}  // namespace textgen::model
