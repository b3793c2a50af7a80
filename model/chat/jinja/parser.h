#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "model/chat/jinja/ast.h"
#include "model/chat/jinja/lexer.h"

namespace textgen::model::jinja {

// Deepest expression or statement nesting a template may have; deeper input is refused
// rather than risking the parser's stack.
inline constexpr int kMaxNestingDepth = 200;

// Builds the statement tree of a tokenized template. Errors name the line and column.
absl::StatusOr<Body> Parse(const std::vector<Token>& tokens, const Source& source);

}  // namespace textgen::model::jinja
