#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/chat/jinja/value.h"

namespace textgen::model::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,      // literal
    kName,         // name
    kList,         // [operands...]
    kTuple,        // (operands...)
    kDict,         // {operands[0]: operands[1], ...}
    kAttribute,    // operands[0].name
    kItem,         // operands[0][operands[1]]
    kSlice,        // operands[0][start:stop:step]; missing parts are null
    kCall,         // operands[0](operands[1...], keywords)
    kFilter,       // operands[0] | name(operands[1...], keywords)
    kTest,         // operands[0] is [not] name(operands[1...])
    kUnary,        // name ("-", "+", "not") operands[0]
    kBinary,       // operands[0] name operands[1]: + - * / // % ** ~ in "not in"
    kCompare,      // operands[0] compare_ops[0] operands[1] ...
    kAnd,          // operands[0] and operands[1]
    kOr,           // operands[0] or operands[1]
    kConditional,  // operands[0] if operands[1] else operands[2] (may be null)
    kBlockInput,   // the body of a {% filter %} block
  };
  Kind kind;
  size_t offset = 0;  // into the template source, for messages
  Value literal;
  std::string name;
  std::vector<ExprPtr> operands;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<std::string> compare_ops;
  bool negated = false;  // kTest: "is not"
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null = required
};

struct Stmt {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // conditions[i] -> bodies[i], else_body
    kFor,          // for targets in expr [if loop_filter] body [else else_body]
    kSet,          // set targets = expr, or set expr.attribute = value (namespace)
    kSetBlock,     // set targets[0] %}body{% endset
    kMacro,        // macro name(params) body
    kCallBlock,    // call(params) expr %}body{% endcall
    kFilterBlock,  // filter expr (a filter chain over kBlockInput) body
    kBreak,
    kContinue,
    kScope,  // a body run as is ({% generation %})
  };
  Kind kind;
  size_t offset = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr value;          // kSet on an attribute: the assigned value (expr is the object)
  std::string attribute;  // kSet on an attribute
  std::vector<std::string> targets;
  bool unpack = false;  // targets written as a tuple ("for k, v in ...")
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  ExprPtr loop_filter;
  std::string name;
  std::vector<MacroParam> params;
};

}  // namespace textgen::model::jinja
