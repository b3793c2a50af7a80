#include "model/chat/jinja/lexer.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/chat/jinja/python_text.h"

namespace textgen::model::jinja {
namespace {

bool IsNameStart(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Python's str.rstrip() (Unicode whitespace).
absl::string_view RstripPy(absl::string_view text) {
  return text.substr(0, PyStripRange(text, std::nullopt, false, true).second);
}

// Length of the Unicode whitespace run at text[at...] (regex \s*).
size_t SpaceRun(absl::string_view text, size_t at) {
  size_t end = at;
  while (end < text.size()) {
    size_t next = end;
    if (!IsPySpace(DecodeCodePoint(text, &next))) break;
    end = next;
  }
  return end - at;
}

bool AllSpace(absl::string_view text) { return SpaceRun(text, 0) == text.size(); }

class Lexer {
 public:
  Lexer(const Source& source, const LexerOptions& options)
      : source_(source), text_(source.text()), options_(options) {}

  absl::StatusOr<std::vector<Token>> Run();

 private:
  enum class Tag { kVariable, kBlock, kComment };

  absl::Status Error(size_t offset, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("template syntax error at ", source_.Describe(offset), ": ", message));
  }

  // Emits data before a tag, after `-` stripping or lstrip_blocks.
  void EmitText(absl::string_view data, size_t offset, Tag tag, char sign);
  // Consumes an end delimiter ("%}" / "#}") with its whitespace control; `dash` says it was
  // written "-%}". Sets line_starting_.
  void ConsumeEnd(size_t end_of_delimiter, char sign);
  absl::Status LexTag(Tag tag, size_t start);
  absl::Status LexComment(size_t start);
  // {% raw %}: returns true when the block at `start` is one (and lexes it).
  absl::StatusOr<bool> LexRaw(size_t start, char sign);
  absl::StatusOr<std::string> LexString(size_t* pos);
  void LexNumber(size_t* pos);

  const Source& source_;
  const std::string& text_;
  const LexerOptions& options_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

void Lexer::EmitText(absl::string_view data, size_t offset, Tag tag, char sign) {
  if (sign == '-') {
    data = RstripPy(data);
  } else if (sign != '+' && options_.lstrip_blocks && tag != Tag::kVariable) {
    const size_t newline = data.rfind('\n');
    const size_t line_start = newline == absl::string_view::npos ? 0 : newline + 1;
    if ((line_start > 0 || line_starting_) && line_start < data.size() &&
        AllSpace(data.substr(line_start))) {
      data = data.substr(0, line_start);
    }
  }
  if (!data.empty()) tokens_.push_back({Token::Type::kText, std::string(data), offset});
}

void Lexer::ConsumeEnd(size_t end_of_delimiter, char sign) {
  pos_ = end_of_delimiter;
  if (sign == '-') {
    pos_ += SpaceRun(text_, pos_);
  } else if (sign != '+' && options_.trim_blocks && pos_ < text_.size() && text_[pos_] == '\n') {
    ++pos_;
  }
  line_starting_ = pos_ > 0 && text_[pos_ - 1] == '\n';
}

absl::StatusOr<std::vector<Token>> Lexer::Run() {
  while (pos_ < text_.size()) {
    size_t start = pos_;
    Tag tag = Tag::kVariable;
    for (;; ++start) {
      start = text_.find('{', start);
      if (start == std::string::npos || start + 1 >= text_.size()) {
        start = std::string::npos;
        break;
      }
      const char next = text_[start + 1];
      if (next == '{' || next == '%' || next == '#') {
        tag = next == '{' ? Tag::kVariable : next == '%' ? Tag::kBlock : Tag::kComment;
        break;
      }
    }
    if (start == std::string::npos) {
      tokens_.push_back({Token::Type::kText, text_.substr(pos_), pos_});
      break;
    }
    const char sign =
        start + 2 < text_.size() && (text_[start + 2] == '-' || text_[start + 2] == '+')
            ? text_[start + 2]
            : '\0';
    const absl::string_view data = absl::string_view(text_).substr(pos_, start - pos_);
    if (tag == Tag::kBlock) {
      // A {% raw %} block emits the data before it itself (with the same stripping).
      absl::StatusOr<bool> raw = LexRaw(start, sign);
      if (!raw.ok()) return raw.status();
      if (*raw) continue;
    }
    EmitText(data, pos_, tag, sign);
    if (tag == Tag::kComment) {
      TEXTGEN_RETURN_IF_ERROR(LexComment(start));
    } else {
      TEXTGEN_RETURN_IF_ERROR(LexTag(tag, start));
    }
  }
  tokens_.push_back({Token::Type::kEof, "", text_.size()});
  return std::move(tokens_);
}

absl::Status Lexer::LexComment(size_t start) {
  const size_t close = text_.find("#}", start + 2);
  if (close == std::string::npos) return Error(start, "missing end of comment tag");
  // "-#}" and "+#}" must not overlap the opening "{#".
  const char sign = close > start + 2 && (text_[close - 1] == '-' || text_[close - 1] == '+')
                        ? text_[close - 1]
                        : '\0';
  ConsumeEnd(close + 2, sign);
  return absl::OkStatus();
}

absl::StatusOr<bool> Lexer::LexRaw(size_t start, char sign) {
  size_t at = start + 2 + (sign ? 1 : 0);
  at += SpaceRun(text_, at);
  if (text_.compare(at, 3, "raw") != 0 || (at + 3 < text_.size() && IsNameChar(text_[at + 3]))) {
    return false;
  }
  at += 3;
  at += SpaceRun(text_, at);
  const bool dash = text_.compare(at, 3, "-%}") == 0;
  if (!dash && text_.compare(at, 2, "%}") != 0) return false;
  EmitText(absl::string_view(text_).substr(pos_, start - pos_), pos_, Tag::kBlock, sign);
  size_t body = at + (dash ? 3 : 2);
  if (dash) body += SpaceRun(text_, body);
  // Find {% endraw %} (any whitespace control).
  for (size_t search = body;;) {
    const size_t open = text_.find("{%", search);
    if (open == std::string::npos) return Error(start, "missing end of raw directive");
    const char end_sign =
        open + 2 < text_.size() && (text_[open + 2] == '-' || text_[open + 2] == '+')
            ? text_[open + 2]
            : '\0';
    size_t k = open + 2 + (end_sign ? 1 : 0);
    k += SpaceRun(text_, k);
    if (text_.compare(k, 6, "endraw") == 0) {
      k += 6;
      k += SpaceRun(text_, k);
      char close_sign = '\0';
      if (k < text_.size() && (text_[k] == '-' || text_[k] == '+')) close_sign = text_[k++];
      if (text_.compare(k, 2, "%}") == 0) {
        pos_ = body;
        line_starting_ = false;
        EmitText(absl::string_view(text_).substr(body, open - body), body, Tag::kBlock, end_sign);
        ConsumeEnd(k + 2, close_sign);
        return true;
      }
    }
    search = open + 2;
  }
}

absl::StatusOr<std::string> Lexer::LexString(size_t* pos) {
  const char quote = text_[*pos];
  const size_t start = *pos;
  std::string out;
  size_t i = start + 1;
  const auto hex_escape = [&](int digits) -> absl::StatusOr<char32_t> {
    if (i + digits > text_.size()) return Error(i, "truncated escape in string literal");
    char32_t value = 0;
    for (int k = 0; k < digits; ++k) {
      const char c = text_[i + k];
      if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) {
        return Error(i, "bad escape in string literal");
      }
      value = value * 16 + (IsDigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10);
    }
    i += digits;
    if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
      return Error(i, "escape is not a Unicode scalar value");
    }
    return value;
  };
  while (true) {
    if (i >= text_.size()) return Error(start, "unterminated string literal");
    const char c = text_[i];
    if (c == quote) break;
    if (c != '\\') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (++i >= text_.size()) return Error(start, "unterminated string literal");
    const char e = text_[i++];
    switch (e) {
      case '\n':
        break;  // line continuation
      case '\\':
      case '\'':
      case '"':
        out.push_back(e);
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x':
      case 'u':
      case 'U': {
        absl::StatusOr<char32_t> value = hex_escape(e == 'x' ? 2 : e == 'u' ? 4 : 8);
        if (!value.ok()) return value.status();
        AppendUtf8(*value, &out);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          char32_t value = e - '0';
          for (int k = 0; k < 2 && i < text_.size() && text_[i] >= '0' && text_[i] <= '7'; ++k) {
            value = value * 8 + (text_[i++] - '0');
          }
          AppendUtf8(value, &out);
        } else {
          out.push_back('\\');  // Python keeps unknown escapes as written
          out.push_back(e);
        }
    }
  }
  *pos = i + 1;
  return out;
}

void Lexer::LexNumber(size_t* pos) {
  const size_t start = *pos;
  size_t i = start;
  const auto digits = [&] {
    const size_t begin = i;
    while (i < text_.size() &&
           (IsDigit(text_[i]) ||
            (text_[i] == '_' && i > begin && i + 1 < text_.size() && IsDigit(text_[i + 1])))) {
      ++i;
    }
    return i > begin;
  };
  digits();
  bool is_float = false;
  if (i + 1 < text_.size() && text_[i] == '.' && IsDigit(text_[i + 1])) {
    ++i;
    digits();
    is_float = true;
  }
  if (i < text_.size() && (text_[i] == 'e' || text_[i] == 'E')) {
    size_t k = i + 1;
    if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
    if (k < text_.size() && IsDigit(text_[k])) {
      i = k;
      digits();
      is_float = true;
    }
  }
  std::string value;
  for (size_t k = start; k < i; ++k) {
    if (text_[k] != '_') value.push_back(text_[k]);
  }
  tokens_.push_back({is_float ? Token::Type::kFloat : Token::Type::kInteger, value, start});
  *pos = i;
}

absl::Status Lexer::LexTag(Tag tag, size_t start) {
  const bool block = tag == Tag::kBlock;
  tokens_.push_back({block ? Token::Type::kBlockBegin : Token::Type::kVariableBegin, "", start});
  size_t i = start + 2 + (text_[start + 2] == '-' || text_[start + 2] == '+' ? 1 : 0);
  std::vector<char> brackets;
  static constexpr const char* kTwoCharOps[] = {"//", "**", "==", "!=", ">=", "<="};
  while (true) {
    i += SpaceRun(text_, i);
    if (i >= text_.size()) {
      return Error(start, block ? "unexpected end of template: missing '%}'"
                                : "unexpected end of template: missing '}}'");
    }
    if (brackets.empty()) {
      const char* close = block ? "%}" : "}}";
      char sign = '\0';
      size_t at = i;
      if (text_[i] == '-' || (block && text_[i] == '+')) {
        sign = text_[i];
        at = i + 1;
      }
      if (text_.compare(at, 2, close) == 0) {
        tokens_.push_back({block ? Token::Type::kBlockEnd : Token::Type::kVariableEnd, "", i});
        if (block) {
          ConsumeEnd(at + 2, sign);
        } else {
          pos_ = at + 2;
          if (sign == '-') pos_ += SpaceRun(text_, pos_);
          line_starting_ = pos_ > 0 && text_[pos_ - 1] == '\n';
        }
        return absl::OkStatus();
      }
    }
    const char c = text_[i];
    if (c == '\'' || c == '"') {
      const size_t begin = i;
      absl::StatusOr<std::string> value = LexString(&i);
      if (!value.ok()) return value.status();
      tokens_.push_back({Token::Type::kString, *std::move(value), begin});
      continue;
    }
    if (IsDigit(c)) {
      LexNumber(&i);
      continue;
    }
    if (IsNameStart(c)) {
      const size_t begin = i;
      while (i < text_.size() && IsNameChar(text_[i])) ++i;
      tokens_.push_back({Token::Type::kName, text_.substr(begin, i - begin), begin});
      continue;
    }
    std::string op;
    for (const char* two : kTwoCharOps) {
      if (text_.compare(i, 2, two) == 0) op = std::string(two);
    }
    if (op.empty()) {
      if (absl::string_view("+-/*%~[](){}><=.:|,;").find(c) == absl::string_view::npos) {
        return Error(i, absl::StrCat("unexpected character '", std::string(1, c), "'"));
      }
      op = std::string(1, c);
      if (c == '(' || c == '[' || c == '{') {
        brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      } else if (c == ')' || c == ']' || c == '}') {
        if (brackets.empty()) return Error(i, absl::StrCat("unexpected '", op, "'"));
        if (brackets.back() != c) {
          return Error(i, absl::StrCat("unexpected '", op, "', expected '",
                                       std::string(1, brackets.back()), "'"));
        }
        brackets.pop_back();
      }
    }
    tokens_.push_back({Token::Type::kOperator, op, i});
    i += op.size();
  }
}

}  // namespace

Source::Source(absl::string_view text, const LexerOptions& options) {
  text_.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      text_.push_back('\n');
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      text_.push_back(text[i]);
    }
  }
  if (!options.keep_trailing_newline && !text_.empty() && text_.back() == '\n') text_.pop_back();
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

std::string Source::Describe(size_t offset) const {
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line = static_cast<size_t>(it - line_starts_.begin());
  const size_t column = CodePointCount(absl::string_view(text_).substr(
                            line_starts_[line - 1], offset - line_starts_[line - 1])) +
                        1;
  return absl::StrCat("line ", line, ", column ", column);
}

absl::StatusOr<std::vector<Token>> Tokenize(const Source& source, const LexerOptions& options) {
  return Lexer(source, options).Run();
}

}  // namespace textgen::model::jinja
