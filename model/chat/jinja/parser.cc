#include "model/chat/jinja/parser.h"

#include "model/chat/jinja/parser_internal.h"

namespace textgen::model::jinja {
namespace parser_internal {

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

}  // namespace parser_internal

absl::StatusOr<Body> Parse(const std::vector<Token>& tokens, const Source& source) {
  return parser_internal::Parser(tokens, source).ParseTemplate();
}

}  // namespace textgen::model::jinja
