#include "model/chat/jinja/parser_internal.h"

namespace textgen::model::jinja::parser_internal {

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

}  // namespace textgen::model::jinja::parser_internal
