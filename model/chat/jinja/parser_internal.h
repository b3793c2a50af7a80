#pragma once

// Private to the template parser (parser.cc: statements; expression_parser.cc: expressions):
// a recursive-descent parser over the lexer's tokens.

#include <charconv>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "model/base/status_macros.h"
#include "model/chat/jinja/ast.h"
#include "model/chat/jinja/lexer.h"
#include "model/chat/jinja/parser.h"

namespace textgen::model::jinja::parser_internal {

using Type = Token::Type;

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const Source& source)
      : tokens_(tokens), source_(source) {}

  absl::StatusOr<Body> ParseTemplate() {
    Body body;
    std::string end_tag;
    TEXTGEN_RETURN_IF_ERROR(ParseBody({}, &body, &end_tag));
    return body;
  }

 private:
  const Token& Current() const { return tokens_[pos_]; }
  const Token& Peek(size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  void Advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool IsName(absl::string_view name) const {
    return Current().type == Type::kName && Current().value == name;
  }
  bool IsOp(absl::string_view op) const {
    return Current().type == Type::kOperator && Current().value == op;
  }
  bool SkipName(absl::string_view name) {
    if (!IsName(name)) return false;
    Advance();
    return true;
  }
  bool SkipOp(absl::string_view op) {
    if (!IsOp(op)) return false;
    Advance();
    return true;
  }

  absl::Status Error(size_t offset, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("template syntax error at ", source_.Describe(offset), ": ", message));
  }
  std::string Describe(const Token& token) const {
    switch (token.type) {
      case Type::kEof:
        return "end of template";
      case Type::kBlockEnd:
        return "'%}'";
      case Type::kVariableEnd:
        return "'}}'";
      case Type::kText:
        return "template text";
      default:
        return absl::StrCat("'", token.value, "'");
    }
  }
  absl::Status Unexpected(absl::string_view expected) const {
    return Error(Current().offset,
                 absl::StrCat("expected ", expected, ", got ", Describe(Current())));
  }
  absl::Status ExpectOp(absl::string_view op) {
    if (SkipOp(op)) return absl::OkStatus();
    return Unexpected(absl::StrCat("'", op, "'"));
  }
  absl::Status ExpectBlockEnd() {
    if (Current().type == Type::kBlockEnd) {
      Advance();
      return absl::OkStatus();
    }
    return Unexpected("'%}'");
  }
  absl::StatusOr<std::string> ExpectName() {
    if (Current().type != Type::kName) return Unexpected("a name");
    std::string name = Current().value;
    Advance();
    return name;
  }

  // Nesting guard: every recursive production holds one.
  class Depth {
   public:
    explicit Depth(Parser* parser) : parser_(parser) { ++parser_->depth_; }
    ~Depth() { --parser_->depth_; }
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;
    bool exceeded() const { return parser_->depth_ > kMaxNestingDepth; }

   private:
    Parser* parser_;
  };
  absl::Status TooDeep() const {
    return Error(Current().offset,
                 absl::StrCat("template nests deeper than ", kMaxNestingDepth, " levels"));
  }

  static ExprPtr MakeExpr(Expr::Kind kind, size_t offset) {
    auto expr = std::make_unique<Expr>();
    expr->kind = kind;
    expr->offset = offset;
    return expr;
  }
  static StmtPtr MakeStmt(Stmt::Kind kind, size_t offset) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = kind;
    stmt->offset = offset;
    return stmt;
  }

  // Parses statements until a block tag named in `ends` (left unconsumed after its name, which
  // goes to *end_tag) or the end of the template (only when `ends` is empty).
  absl::Status ParseBody(std::initializer_list<absl::string_view> ends, Body* body,
                         std::string* end_tag);
  absl::StatusOr<StmtPtr> ParseStatement();
  absl::StatusOr<StmtPtr> ParseIf(size_t offset);
  absl::StatusOr<StmtPtr> ParseFor(size_t offset);
  absl::StatusOr<StmtPtr> ParseSet(size_t offset);
  absl::StatusOr<StmtPtr> ParseMacro(size_t offset);
  absl::StatusOr<StmtPtr> ParseCallBlock(size_t offset);
  absl::StatusOr<StmtPtr> ParseFilterBlock(size_t offset);
  // "%}" body "{% end_tag %}" of a block statement.
  absl::Status ParseBlockBody(absl::string_view end_tag, Body* body);
  // item ("," item)* [","] then `close`; `item` parses one element.
  absl::Status ParseSeparated(absl::string_view close, const std::function<absl::Status()>& item);
  absl::Status ParseParams(std::vector<MacroParam>* params);
  absl::Status ParseTargets(Stmt* stmt);

  // next (operator next)*, left-associative; `take_operator` consumes an operator token and
  // sets the node's kind or name, or says there is none.
  absl::StatusOr<ExprPtr> ParseChain(const std::function<absl::StatusOr<ExprPtr>()>& next,
                                     const std::function<bool(Expr* node)>& take_operator);
  std::function<bool(Expr*)> Keyword(absl::string_view name, Expr::Kind kind);
  std::function<bool(Expr*)> Operators(std::initializer_list<absl::string_view> ops);
  absl::StatusOr<ExprPtr> ParseTuple(bool with_condexpr);
  absl::StatusOr<ExprPtr> ParseExpression(bool with_condexpr = true);
  absl::StatusOr<ExprPtr> ParseConditional();
  absl::StatusOr<ExprPtr> ParseOr();
  absl::StatusOr<ExprPtr> ParseAnd();
  absl::StatusOr<ExprPtr> ParseNot();
  absl::StatusOr<ExprPtr> ParseCompare();
  absl::StatusOr<ExprPtr> ParseMath1();
  absl::StatusOr<ExprPtr> ParseConcat();
  absl::StatusOr<ExprPtr> ParseMath2();
  absl::StatusOr<ExprPtr> ParsePow();
  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter);
  absl::StatusOr<ExprPtr> ParsePrimary();
  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseFilterExpr(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseSubscript(ExprPtr node);
  absl::StatusOr<ExprPtr> ParseCall(ExprPtr callee);  // at "("
  absl::Status ParseCallArgs(Expr* call);
  absl::StatusOr<ExprPtr> ParseFilter(ExprPtr node);

  const std::vector<Token>& tokens_;
  const Source& source_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace textgen::model::jinja::parser_internal
