#pragma once

// Regular expressions (the common ECMAScript/PCRE subset) compiled into grammar rules:
// literals, `.`, classes `[a-z]` `[^...]`, `\d \w \s \D \W \S`, escapes (`\n`, `\uXXXX`,
// `\xHH`, `\.`), groups `(...)` `(?:...)`, alternation, quantifiers `* + ? {n} {n,} {n,m}`
// (lazy forms match the same language), and `^` / `$` at the ends. Backreferences,
// lookaround and anchors elsewhere are refused with their offset. The whole output must
// match: a regex is anchored at both ends.

#include <string_view>

#include "absl/status/statusor.h"
#include "model/constraint/char_class.h"
#include "model/constraint/grammar.h"

namespace textgen::model {

struct RegexLimits {
  int max_repeat = 1000;  // the largest {n,m} bound
  size_t max_length = 1 << 16;
};

struct CompiledRegex {
  int rule;
  bool anchored_start;  // the regex began with ^
  bool anchored_end;    // the regex ended with $
};

// Adds rules matching `regex` to `builder`. Messages give the byte offset of the problem.
absl::StatusOr<CompiledRegex> CompileRegex(GrammarBuilder& builder, std::string_view regex,
                                           TextContext context, const RegexLimits& limits = {});

}  // namespace textgen::model
