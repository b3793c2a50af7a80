#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace textgen::model::jinja {

struct LexerOptions {
  bool trim_blocks = true;    // drop the first newline after a block tag
  bool lstrip_blocks = true;  // drop spaces and tabs before a block tag at a line start
  bool keep_trailing_newline = false;
};

struct Token {
  enum class Type {
    kText,           // template data, whitespace control already applied
    kVariableBegin,  // {{
    kVariableEnd,    // }}
    kBlockBegin,     // {%
    kBlockEnd,       // %}
    kName,
    kString,   // value holds the decoded text
    kInteger,  // value holds the digits (underscores removed)
    kFloat,
    kOperator,
    kEof,
  };
  Type type;
  std::string value;
  size_t offset = 0;  // into the normalized source
};

// A template's source after Jinja's newline normalization ("\r\n" and "\r" become "\n", one
// trailing newline dropped), with line/column lookup for messages.
class Source {
 public:
  Source(absl::string_view text, const LexerOptions& options);
  const std::string& text() const { return text_; }
  // "line 3, column 14" (1-based) for a byte offset.
  std::string Describe(size_t offset) const;

 private:
  std::string text_;
  std::vector<size_t> line_starts_;
};

// Splits a template into tokens, applying `-`/`+` whitespace control, trim_blocks and
// lstrip_blocks exactly as Jinja2's lexer does. {% raw %} blocks become text; comments vanish.
absl::StatusOr<std::vector<Token>> Tokenize(const Source& source, const LexerOptions& options);

}  // namespace textgen::model::jinja
