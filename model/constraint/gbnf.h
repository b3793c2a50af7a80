#pragma once

// Context-free grammars in llama.cpp's GBNF: `name ::= alternatives`, where an alternative is
// a sequence of "literals" (escapes \n \t \r \\ \" \xHH \uHHHH \UHHHHHHHH), [classes]
// (ranges, ^ negation), `.` (any character), rule names, ( groups ), and the postfix
// operators * + ? {n} {n,} {n,m}. `#` starts a comment. Generation starts at `root`. A rule
// may continue on the following lines; it ends where the next `name ::=` begins. Refused with
// the line and rule named: undefined or unused rules, left recursion, rules that can never
// finish, oversized grammars.

#include <string_view>

#include "absl/status/statusor.h"
#include "model/constraint/grammar.h"

namespace textgen::model {

struct GbnfLimits {
  size_t max_bytes = 1 << 20;
  int max_rules = 10000;
  int max_repeat = 1000;
  GrammarLimits grammar;
};

absl::StatusOr<Grammar> ParseGbnf(std::string_view text, const GbnfLimits& limits = {});

}  // namespace textgen::model
