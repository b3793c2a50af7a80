#include "model/chat/jinja/parser.h"

#include <charconv>
#include <cstdlib>
#include <functional>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "model/base/status_macros.h"

namespace textgen::model::jinja {
namespace {

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

absl::Status Parser::ParseBody(std::initializer_list<absl::string_view> ends, Body* body,
                               std::string* end_tag) {
  Depth depth(this);
  if (depth.exceeded()) return TooDeep();
  while (true) {
    const Token& token = Current();
    switch (token.type) {
      case Type::kEof:
        if (ends.size() == 0) return absl::OkStatus();
        return Error(
            token.offset,
            absl::StrCat("unexpected end of template; expected ",
                         absl::StrJoin(ends, " or ", [](std::string* out, absl::string_view end) {
                           absl::StrAppend(out, "'{% ", end, " %}'");
                         })));
      case Type::kText:
        body->push_back(MakeStmt(Stmt::Kind::kText, token.offset));
        body->back()->text = token.value;
        Advance();
        break;
      case Type::kVariableBegin: {
        Advance();
        auto stmt = MakeStmt(Stmt::Kind::kOutput, token.offset);
        absl::StatusOr<ExprPtr> expr = ParseTuple(/*with_condexpr=*/true);
        if (!expr.ok()) return expr.status();
        stmt->expr = *std::move(expr);
        if (Current().type != Type::kVariableEnd) return Unexpected("'}}'");
        Advance();
        body->push_back(std::move(stmt));
        break;
      }
      case Type::kBlockBegin: {
        const Token& name = Peek();
        if (name.type == Type::kName) {
          for (absl::string_view end : ends) {
            if (name.value == end) {
              Advance();
              Advance();
              *end_tag = name.value;
              return absl::OkStatus();
            }
          }
        }
        absl::StatusOr<StmtPtr> stmt = ParseStatement();
        if (!stmt.ok()) return stmt.status();
        body->push_back(*std::move(stmt));
        break;
      }
      default:
        return Unexpected("template text or a tag");
    }
  }
}

absl::StatusOr<StmtPtr> Parser::ParseStatement() {
  const size_t offset = Current().offset;
  Advance();  // {%
  if (Current().type != Type::kName) return Unexpected("a tag name");
  const std::string tag = Current().value;
  Advance();
  if (tag == "if") return ParseIf(offset);
  if (tag == "for") return ParseFor(offset);
  if (tag == "set") return ParseSet(offset);
  if (tag == "macro") return ParseMacro(offset);
  if (tag == "call") return ParseCallBlock(offset);
  if (tag == "filter") return ParseFilterBlock(offset);
  if (tag == "break" || tag == "continue") {
    TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
    return MakeStmt(tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, offset);
  }
  if (tag == "generation") {
    // Hugging Face's AssistantTracker extension: marks assistant text; renders its body.
    auto stmt = MakeStmt(Stmt::Kind::kScope, offset);
    TEXTGEN_RETURN_IF_ERROR(ParseBlockBody("endgeneration", &stmt->body));
    return stmt;
  }
  return Error(offset, absl::StrCat("unknown tag '", tag, "'"));
}

absl::StatusOr<StmtPtr> Parser::ParseIf(size_t offset) {
  auto stmt = MakeStmt(Stmt::Kind::kIf, offset);
  while (true) {
    absl::StatusOr<ExprPtr> condition = ParseTuple(/*with_condexpr=*/false);
    if (!condition.ok()) return condition.status();
    TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
    stmt->conditions.push_back(*std::move(condition));
    stmt->bodies.emplace_back();
    std::string end;
    if (absl::Status s = ParseBody({"elif", "else", "endif"}, &stmt->bodies.back(), &end);
        !s.ok()) {
      return s;
    }
    if (end == "elif") continue;
    if (end == "else") {
      TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
      TEXTGEN_RETURN_IF_ERROR(ParseBody({"endif"}, &stmt->else_body, &end));
    }
    TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
    return stmt;
  }
}

absl::Status Parser::ParseTargets(Stmt* stmt) {
  const bool parenthesized = SkipOp("(");
  while (true) {
    absl::StatusOr<std::string> name = ExpectName();
    if (!name.ok()) return name.status();
    stmt->targets.push_back(*std::move(name));
    if (!SkipOp(",")) break;
    stmt->unpack = true;
    if (Current().type != Type::kName) break;  // trailing comma
  }
  if (parenthesized) {
    stmt->unpack = true;
    return ExpectOp(")");
  }
  return absl::OkStatus();
}

absl::StatusOr<StmtPtr> Parser::ParseFor(size_t offset) {
  auto stmt = MakeStmt(Stmt::Kind::kFor, offset);
  TEXTGEN_RETURN_IF_ERROR(ParseTargets(stmt.get()));
  if (!SkipName("in")) return Unexpected("'in'");
  absl::StatusOr<ExprPtr> iterable = ParseTuple(/*with_condexpr=*/false);
  if (!iterable.ok()) return iterable.status();
  stmt->expr = *std::move(iterable);
  if (SkipName("if")) {
    absl::StatusOr<ExprPtr> filter = ParseExpression();
    if (!filter.ok()) return filter.status();
    stmt->loop_filter = *std::move(filter);
  }
  if (IsName("recursive")) return Error(Current().offset, "recursive loops are not supported");
  TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string end;
  TEXTGEN_RETURN_IF_ERROR(ParseBody({"else", "endfor"}, &stmt->body, &end));
  if (end == "else") {
    TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
    TEXTGEN_RETURN_IF_ERROR(ParseBody({"endfor"}, &stmt->else_body, &end));
  }
  TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
  return stmt;
}

absl::StatusOr<StmtPtr> Parser::ParseSet(size_t offset) {
  auto stmt = MakeStmt(Stmt::Kind::kSet, offset);
  // "set ns.attr = value"
  if (Current().type == Type::kName && Peek().type == Type::kOperator && Peek().value == "." &&
      Peek(2).type == Type::kName) {
    auto object = MakeExpr(Expr::Kind::kName, Current().offset);
    object->name = Current().value;
    Advance();
    Advance();
    stmt->attribute = Current().value;
    Advance();
    stmt->expr = std::move(object);
    TEXTGEN_RETURN_IF_ERROR(ExpectOp("="));
    absl::StatusOr<ExprPtr> value = ParseTuple(/*with_condexpr=*/true);
    if (!value.ok()) return value.status();
    stmt->value = *std::move(value);
    TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
    return stmt;
  }
  TEXTGEN_RETURN_IF_ERROR(ParseTargets(stmt.get()));
  if (SkipOp("=")) {
    absl::StatusOr<ExprPtr> value = ParseTuple(/*with_condexpr=*/true);
    if (!value.ok()) return value.status();
    stmt->expr = *std::move(value);
    TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
    return stmt;
  }
  // Block set: {% set name %}...{% endset %}, optionally with a filter chain.
  if (stmt->unpack) return Unexpected("'='");
  stmt->kind = Stmt::Kind::kSetBlock;
  if (IsOp("|")) {
    absl::StatusOr<ExprPtr> chain = ParseFilterExpr(MakeExpr(Expr::Kind::kBlockInput, offset));
    if (!chain.ok()) return chain.status();
    stmt->expr = *std::move(chain);
  }
  TEXTGEN_RETURN_IF_ERROR(ParseBlockBody("endset", &stmt->body));
  return stmt;
}

absl::Status Parser::ParseBlockBody(absl::string_view end_tag, Body* body) {
  TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string end;
  TEXTGEN_RETURN_IF_ERROR(ParseBody({end_tag}, body, &end));
  return ExpectBlockEnd();
}

absl::Status Parser::ParseSeparated(absl::string_view close,
                                    const std::function<absl::Status()>& item) {
  for (bool first = true; !SkipOp(close); first = false) {
    if (!first) {
      TEXTGEN_RETURN_IF_ERROR(ExpectOp(","));
      if (SkipOp(close)) break;  // a trailing comma
    }
    TEXTGEN_RETURN_IF_ERROR(item());
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseParams(std::vector<MacroParam>* params) {
  TEXTGEN_RETURN_IF_ERROR(ExpectOp("("));
  return ParseSeparated(")", [&]() -> absl::Status {
    MacroParam param;
    absl::StatusOr<std::string> name = ExpectName();
    if (!name.ok()) return name.status();
    param.name = *std::move(name);
    if (SkipOp("=")) {
      absl::StatusOr<ExprPtr> value = ParseExpression();
      if (!value.ok()) return value.status();
      param.default_value = *std::move(value);
    }
    params->push_back(std::move(param));
    return absl::OkStatus();
  });
}

absl::StatusOr<StmtPtr> Parser::ParseMacro(size_t offset) {
  auto stmt = MakeStmt(Stmt::Kind::kMacro, offset);
  absl::StatusOr<std::string> name = ExpectName();
  if (!name.ok()) return name.status();
  stmt->name = *std::move(name);
  TEXTGEN_RETURN_IF_ERROR(ParseParams(&stmt->params));
  TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string end;
  TEXTGEN_RETURN_IF_ERROR(ParseBody({"endmacro"}, &stmt->body, &end));
  if (Current().type == Type::kName && Current().value == stmt->name) Advance();
  TEXTGEN_RETURN_IF_ERROR(ExpectBlockEnd());
  return stmt;
}

absl::StatusOr<StmtPtr> Parser::ParseCallBlock(size_t offset) {
  auto stmt = MakeStmt(Stmt::Kind::kCallBlock, offset);
  if (IsOp("(")) {
    TEXTGEN_RETURN_IF_ERROR(ParseParams(&stmt->params));
  }
  absl::StatusOr<ExprPtr> call = ParseExpression();
  if (!call.ok()) return call.status();
  if ((*call)->kind != Expr::Kind::kCall) {
    return Error(offset, "{% call %} needs a macro call, e.g. {% call m(x) %}");
  }
  stmt->expr = *std::move(call);
  TEXTGEN_RETURN_IF_ERROR(ParseBlockBody("endcall", &stmt->body));
  return stmt;
}

absl::StatusOr<StmtPtr> Parser::ParseFilterBlock(size_t offset) {
  auto stmt = MakeStmt(Stmt::Kind::kFilterBlock, offset);
  auto input = MakeExpr(Expr::Kind::kBlockInput, offset);
  absl::StatusOr<ExprPtr> chain = ParseFilter(std::move(input));
  if (!chain.ok()) return chain.status();
  while (IsOp("|")) {
    chain = ParseFilter(*std::move(chain));
    if (!chain.ok()) return chain.status();
  }
  stmt->expr = *std::move(chain);
  TEXTGEN_RETURN_IF_ERROR(ParseBlockBody("endfilter", &stmt->body));
  return stmt;
}

absl::StatusOr<ExprPtr> Parser::ParseTuple(bool with_condexpr) {
  const size_t offset = Current().offset;
  absl::StatusOr<ExprPtr> first = ParseExpression(with_condexpr);
  if (!first.ok()) return first.status();
  if (!IsOp(",")) return first;
  // A bare tuple: "a, b".
  auto tuple = MakeExpr(Expr::Kind::kTuple, offset);
  tuple->operands.push_back(*std::move(first));
  while (SkipOp(",")) {
    if (Current().type == Type::kBlockEnd || Current().type == Type::kVariableEnd || IsOp("=") ||
        IsOp(")")) {
      break;
    }
    absl::StatusOr<ExprPtr> next = ParseExpression(with_condexpr);
    if (!next.ok()) return next.status();
    tuple->operands.push_back(*std::move(next));
  }
  return tuple;
}

absl::StatusOr<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  Depth depth(this);
  if (depth.exceeded()) return TooDeep();
  return with_condexpr ? ParseConditional() : ParseOr();
}

absl::StatusOr<ExprPtr> Parser::ParseConditional() {
  absl::StatusOr<ExprPtr> node = ParseOr();
  if (!node.ok()) return node;
  while (IsName("if")) {
    const size_t offset = Current().offset;
    Advance();
    absl::StatusOr<ExprPtr> condition = ParseOr();
    if (!condition.ok()) return condition;
    auto conditional = MakeExpr(Expr::Kind::kConditional, offset);
    conditional->operands.push_back(*std::move(node));
    conditional->operands.push_back(*std::move(condition));
    if (SkipName("else")) {
      absl::StatusOr<ExprPtr> otherwise = ParseExpression();
      if (!otherwise.ok()) return otherwise;
      conditional->operands.push_back(*std::move(otherwise));
    } else {
      conditional->operands.push_back(nullptr);
    }
    node = std::move(conditional);
  }
  return node;
}

absl::StatusOr<ExprPtr> Parser::ParseChain(const std::function<absl::StatusOr<ExprPtr>()>& next,
                                           const std::function<bool(Expr* node)>& take_operator) {
  absl::StatusOr<ExprPtr> left = next();
  if (!left.ok()) return left;
  while (true) {
    auto node = MakeExpr(Expr::Kind::kBinary, Current().offset);
    if (!take_operator(node.get())) return left;
    absl::StatusOr<ExprPtr> right = next();
    if (!right.ok()) return right;
    node->operands.push_back(*std::move(left));
    node->operands.push_back(*std::move(right));
    left = std::move(node);
  }
}

std::function<bool(Expr*)> Parser::Keyword(absl::string_view name, Expr::Kind kind) {
  return [this, name, kind](Expr* node) {
    if (!SkipName(name)) return false;
    node->kind = kind;
    return true;
  };
}

std::function<bool(Expr*)> Parser::Operators(std::initializer_list<absl::string_view> ops) {
  std::vector<absl::string_view> accepted(ops);
  return [this, accepted](Expr* node) {
    if (Current().type != Type::kOperator) return false;
    for (absl::string_view op : accepted) {
      if (Current().value == op) {
        node->name = std::string(op);
        Advance();
        return true;
      }
    }
    return false;
  };
}

absl::StatusOr<ExprPtr> Parser::ParseOr() {
  return ParseChain([this] { return ParseAnd(); }, Keyword("or", Expr::Kind::kOr));
}

absl::StatusOr<ExprPtr> Parser::ParseAnd() {
  return ParseChain([this] { return ParseNot(); }, Keyword("and", Expr::Kind::kAnd));
}

absl::StatusOr<ExprPtr> Parser::ParseNot() {
  if (IsName("not")) {
    Depth depth(this);
    if (depth.exceeded()) return TooDeep();
    auto node = MakeExpr(Expr::Kind::kUnary, Current().offset);
    node->name = "not";
    Advance();
    absl::StatusOr<ExprPtr> operand = ParseNot();
    if (!operand.ok()) return operand;
    node->operands.push_back(*std::move(operand));
    return node;
  }
  return ParseCompare();
}

absl::StatusOr<ExprPtr> Parser::ParseCompare() {
  const size_t offset = Current().offset;
  absl::StatusOr<ExprPtr> first = ParseMath1();
  if (!first.ok()) return first;
  ExprPtr compare;
  while (true) {
    std::string op;
    if (Current().type == Type::kOperator &&
        (Current().value == "==" || Current().value == "!=" || Current().value == "<" ||
         Current().value == "<=" || Current().value == ">" || Current().value == ">=")) {
      op = Current().value;
      Advance();
    } else if (IsName("in")) {
      op = "in";
      Advance();
    } else if (IsName("not") && Peek().type == Type::kName && Peek().value == "in") {
      op = "not in";
      Advance();
      Advance();
    } else {
      break;
    }
    absl::StatusOr<ExprPtr> next = ParseMath1();
    if (!next.ok()) return next;
    if (!compare) {
      compare = MakeExpr(Expr::Kind::kCompare, offset);
      compare->operands.push_back(*std::move(first));
    }
    compare->compare_ops.push_back(op);
    compare->operands.push_back(*std::move(next));
  }
  if (compare) return compare;
  return first;
}

absl::StatusOr<ExprPtr> Parser::ParseMath1() {
  return ParseChain([this] { return ParseConcat(); }, Operators({"+", "-"}));
}

absl::StatusOr<ExprPtr> Parser::ParseConcat() {
  return ParseChain([this] { return ParseMath2(); }, Operators({"~"}));
}

absl::StatusOr<ExprPtr> Parser::ParseMath2() {
  return ParseChain([this] { return ParsePow(); }, Operators({"*", "/", "//", "%"}));
}

absl::StatusOr<ExprPtr> Parser::ParsePow() {
  return ParseChain([this] { return ParseUnary(/*with_filter=*/true); }, Operators({"**"}));
}

absl::StatusOr<ExprPtr> Parser::ParseUnary(bool with_filter) {
  Depth depth(this);
  if (depth.exceeded()) return TooDeep();
  absl::StatusOr<ExprPtr> node;
  if (IsOp("-") || IsOp("+")) {
    auto unary = MakeExpr(Expr::Kind::kUnary, Current().offset);
    unary->name = Current().value;
    Advance();
    absl::StatusOr<ExprPtr> operand = ParseUnary(/*with_filter=*/false);
    if (!operand.ok()) return operand;
    unary->operands.push_back(*std::move(operand));
    node = std::move(unary);
  } else {
    node = ParsePrimary();
    if (!node.ok()) return node;
  }
  node = ParsePostfix(*std::move(node));
  if (!node.ok() || !with_filter) return node;
  return ParseFilterExpr(*std::move(node));
}

absl::StatusOr<ExprPtr> Parser::ParsePrimary() {
  const Token& token = Current();
  const size_t offset = token.offset;
  switch (token.type) {
    case Type::kName: {
      auto node = MakeExpr(Expr::Kind::kLiteral, offset);
      if (token.value == "true" || token.value == "True") {
        node->literal = Value::Bool(true);
      } else if (token.value == "false" || token.value == "False") {
        node->literal = Value::Bool(false);
      } else if (token.value == "none" || token.value == "None") {
        node->literal = Value::MakeNone();
      } else {
        node->kind = Expr::Kind::kName;
        node->name = token.value;
      }
      Advance();
      return node;
    }
    case Type::kString: {
      std::string text;
      while (Current().type == Type::kString) {  // adjacent literals concatenate
        text += Current().value;
        Advance();
      }
      auto node = MakeExpr(Expr::Kind::kLiteral, offset);
      node->literal = Value::String(std::move(text));
      return node;
    }
    case Type::kInteger: {
      int64_t value = 0;
      const auto result =
          std::from_chars(token.value.data(), token.value.data() + token.value.size(), value);
      if (result.ec != std::errc()) return Error(offset, "integer literal out of range");
      auto node = MakeExpr(Expr::Kind::kLiteral, offset);
      node->literal = Value::Int(value);
      Advance();
      return node;
    }
    case Type::kFloat: {
      auto node = MakeExpr(Expr::Kind::kLiteral, offset);
      node->literal = Value::Float(std::strtod(token.value.c_str(), nullptr));
      Advance();
      return node;
    }
    case Type::kOperator:
      if (token.value == "(") {
        Advance();
        if (SkipOp(")")) return MakeExpr(Expr::Kind::kTuple, offset);
        absl::StatusOr<ExprPtr> inner = ParseTuple(/*with_condexpr=*/true);
        if (!inner.ok()) return inner;
        TEXTGEN_RETURN_IF_ERROR(ExpectOp(")"));
        return inner;
      }
      if (token.value == "[" || token.value == "{") {
        const bool list = token.value == "[";
        Advance();
        auto node = MakeExpr(list ? Expr::Kind::kList : Expr::Kind::kDict, offset);
        absl::Status status = ParseSeparated(list ? "]" : "}", [&]() -> absl::Status {
          absl::StatusOr<ExprPtr> item = ParseExpression();  // a list item or a dict key
          if (!item.ok()) return item.status();
          node->operands.push_back(*std::move(item));
          if (list) return absl::OkStatus();
          TEXTGEN_RETURN_IF_ERROR(ExpectOp(":"));
          absl::StatusOr<ExprPtr> value = ParseExpression();
          if (!value.ok()) return value.status();
          node->operands.push_back(*std::move(value));
          return absl::OkStatus();
        });
        if (!status.ok()) return status;
        return node;
      }
      break;
    default:
      break;
  }
  return Unexpected("an expression");
}

absl::StatusOr<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".")) {
      const size_t offset = Current().offset;
      Advance();
      if (Current().type == Type::kName) {
        auto attribute = MakeExpr(Expr::Kind::kAttribute, offset);
        attribute->name = Current().value;
        attribute->operands.push_back(std::move(node));
        Advance();
        node = std::move(attribute);
      } else if (Current().type == Type::kInteger) {  // x.0 is x[0]
        auto item = MakeExpr(Expr::Kind::kItem, offset);
        auto index = MakeExpr(Expr::Kind::kLiteral, Current().offset);
        index->literal = Value::Int(std::strtoll(Current().value.c_str(), nullptr, 10));
        item->operands.push_back(std::move(node));
        item->operands.push_back(std::move(index));
        Advance();
        node = std::move(item);
      } else {
        return Unexpected("an attribute name");
      }
    } else if (IsOp("[")) {
      absl::StatusOr<ExprPtr> subscript = ParseSubscript(std::move(node));
      if (!subscript.ok()) return subscript;
      node = *std::move(subscript);
    } else if (IsOp("(")) {
      absl::StatusOr<ExprPtr> call = ParseCall(std::move(node));
      if (!call.ok()) return call;
      node = *std::move(call);
    } else {
      return node;
    }
  }
}

absl::StatusOr<ExprPtr> Parser::ParseSubscript(ExprPtr node) {
  const size_t offset = Current().offset;
  Advance();  // [
  ExprPtr parts[3];
  int colons = 0;
  while (!IsOp("]")) {
    if (SkipOp(":")) {
      if (++colons > 2) return Unexpected("']'");
      continue;
    }
    if (parts[colons]) return Unexpected("':' or ']'");
    absl::StatusOr<ExprPtr> part = ParseExpression();
    if (!part.ok()) return part;
    parts[colons] = *std::move(part);
  }
  Advance();  // ]
  if (colons == 0) {
    if (!parts[0]) return Error(offset, "empty subscript");
    auto item = MakeExpr(Expr::Kind::kItem, offset);
    item->operands.push_back(std::move(node));
    item->operands.push_back(std::move(parts[0]));
    return item;
  }
  auto slice = MakeExpr(Expr::Kind::kSlice, offset);
  slice->operands.push_back(std::move(node));
  for (ExprPtr& part : parts) slice->operands.push_back(std::move(part));
  return slice;
}

absl::StatusOr<ExprPtr> Parser::ParseCall(ExprPtr callee) {
  auto call = MakeExpr(Expr::Kind::kCall, Current().offset);
  call->operands.push_back(std::move(callee));
  TEXTGEN_RETURN_IF_ERROR(ParseCallArgs(call.get()));
  return call;
}

absl::Status Parser::ParseCallArgs(Expr* call) {
  Advance();  // (
  return ParseSeparated(")", [&]() -> absl::Status {
    if (IsOp("*") || IsOp("**")) {
      return Error(Current().offset, "*args and **kwargs in calls are not supported");
    }
    if (Current().type == Type::kName && Peek().type == Type::kOperator && Peek().value == "=") {
      std::string name = Current().value;
      Advance();
      Advance();
      absl::StatusOr<ExprPtr> value = ParseExpression();
      if (!value.ok()) return value.status();
      call->keywords.emplace_back(std::move(name), *std::move(value));
      return absl::OkStatus();
    }
    if (!call->keywords.empty()) {
      return Error(Current().offset, "positional argument follows keyword argument");
    }
    absl::StatusOr<ExprPtr> value = ParseExpression();
    if (!value.ok()) return value.status();
    call->operands.push_back(*std::move(value));
    return absl::OkStatus();
  });
}

absl::StatusOr<ExprPtr> Parser::ParseFilter(ExprPtr node) {
  if (IsOp("|")) Advance();
  auto filter = MakeExpr(Expr::Kind::kFilter, Current().offset);
  absl::StatusOr<std::string> name = ExpectName();
  if (!name.ok()) return name.status();
  filter->name = *std::move(name);
  while (IsOp(".")) {  // dotted filter names
    Advance();
    absl::StatusOr<std::string> part = ExpectName();
    if (!part.ok()) return part.status();
    absl::StrAppend(&filter->name, ".", *part);
  }
  filter->operands.push_back(std::move(node));
  if (IsOp("(")) {
    TEXTGEN_RETURN_IF_ERROR(ParseCallArgs(filter.get()));
  }
  return filter;
}

absl::StatusOr<ExprPtr> Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|")) {
      absl::StatusOr<ExprPtr> filter = ParseFilter(std::move(node));
      if (!filter.ok()) return filter;
      node = *std::move(filter);
    } else if (IsName("is")) {
      auto test = MakeExpr(Expr::Kind::kTest, Current().offset);
      Advance();
      test->negated = SkipName("not");
      absl::StatusOr<std::string> name = ExpectName();
      if (!name.ok()) return name.status();
      test->name = *std::move(name);
      test->operands.push_back(std::move(node));
      if (IsOp("(")) {
        TEXTGEN_RETURN_IF_ERROR(ParseCallArgs(test.get()));
      } else if ((Current().type == Type::kName || Current().type == Type::kString ||
                  Current().type == Type::kInteger || Current().type == Type::kFloat || IsOp("[") ||
                  IsOp("{")) &&
                 !IsName("else") && !IsName("or") && !IsName("and")) {
        // One argument without parentheses: "x is divisibleby 3", "x is sameas none".
        absl::StatusOr<ExprPtr> arg = ParsePrimary();
        if (!arg.ok()) return arg;
        arg = ParsePostfix(*std::move(arg));
        if (!arg.ok()) return arg;
        test->operands.push_back(*std::move(arg));
      }
      node = std::move(test);
    } else if (IsOp("(")) {
      absl::StatusOr<ExprPtr> call = ParseCall(std::move(node));
      if (!call.ok()) return call;
      node = *std::move(call);
    } else {
      return node;
    }
  }
}

}  // namespace

absl::StatusOr<Body> Parse(const std::vector<Token>& tokens, const Source& source) {
  return Parser(tokens, source).ParseTemplate();
}

}  // namespace textgen::model::jinja
