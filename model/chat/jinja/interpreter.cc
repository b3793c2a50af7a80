#include "model/chat/jinja/interpreter.h"

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/chat/jinja/builtins.h"
#include "model/chat/jinja/operators.h"
#include "model/chat/jinja/python_text.h"

namespace textgen::model::jinja {
namespace {

constexpr absl::string_view kLocatedPrefix = "template error at ";

}  // namespace

const Value* Frame::Find(absl::string_view name) const {
  for (const Frame* frame = this; frame != nullptr; frame = frame->parent.get()) {
    if (auto it = frame->vars.find(absl::string_view(name.data(), name.size()));
        it != frame->vars.end()) {
      return &it->second;
    }
  }
  return nullptr;
}

Interpreter::Interpreter(const Source& source, const RenderOptions& options)
    : source_(source), options_(options) {}

absl::Status Interpreter::CheckItems(int64_t n) const {
  if (n <= options_.limits.max_collection_items) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("the template built a list of ", n,
                                                   " items; the limit is ",
                                                   options_.limits.max_collection_items));
}

absl::Status Interpreter::CheckBytes(size_t n) const {
  if (n <= options_.limits.max_output_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("the template built a string of more than ",
                                                   options_.limits.max_output_bytes,
                                                   " bytes (the rendering limit)"));
}

absl::Status Interpreter::Charge(size_t n) {
  TEXTGEN_RETURN_IF_ERROR(CheckBytes(n));
  work_bytes_ += n;
  if (work_bytes_ <= options_.limits.max_output_bytes * kWorkBytesFactor) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the template built more than ", options_.limits.max_output_bytes * kWorkBytesFactor,
      " bytes of text in one rendering (", kWorkBytesFactor, " times the output limit)"));
}

int64_t Interpreter::NowUnixSeconds() const {
  if (options_.now_unix_seconds) return *options_.now_unix_seconds;
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::Status Interpreter::Locate(absl::Status status, size_t offset) const {
  if (status.ok() || status.code() == absl::StatusCode::kResourceExhausted ||
      status.GetPayload(kRaisedByTemplatePayload).has_value() ||
      absl::StartsWith(status.message(), kLocatedPrefix)) {
    return status;
  }
  return absl::Status(status.code(), absl::StrCat(kLocatedPrefix, source_.Describe(offset), ": ",
                                                  status.message()));
}

absl::StatusOr<TaintedString> Interpreter::Render(const Body& body, const Dict& context) {
  auto globals = std::make_shared<Frame>();
  AddGlobals(*globals);
  auto root = std::make_shared<Frame>();
  root->parent = globals;
  for (const auto& [key, value] : context.entries()) {
    if (key.is_string()) root->vars[key.str()] = value;
  }
  TaintedString output;
  output_ = &output;
  absl::StatusOr<Flow> flow = ExecBody(body, root);
  output_ = nullptr;
  for (Value& ns : namespaces_) ns.mutable_dict() = Dict();  // breaks any cycle through it
  namespaces_.clear();
  if (!flow.ok()) return flow.status();
  return output;
}

absl::StatusOr<Interpreter::Flow> Interpreter::ExecBody(const Body& body, const FramePtr& frame) {
  for (const StmtPtr& stmt : body) {
    absl::StatusOr<Flow> flow = Exec(*stmt, frame);
    if (!flow.ok()) return Locate(flow.status(), stmt->offset);
    if (*flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

absl::StatusOr<Interpreter::Flow> Interpreter::Exec(const Stmt& stmt, const FramePtr& frame) {
  const auto write = [&](const TaintedString& text) -> absl::Status {
    if (output_->bytes.size() + text.bytes.size() > options_.limits.max_output_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the template's output exceeds the limit of ",
                       options_.limits.max_output_bytes, " bytes"));
    }
    TEXTGEN_RETURN_IF_ERROR(Charge(text.bytes.size()));
    AppendText(text, output_);
    return absl::OkStatus();
  };
  switch (stmt.kind) {
    case Stmt::Kind::kText:
      TEXTGEN_RETURN_IF_ERROR(write(TaintedString{stmt.text, {}}));
      return Flow::kNormal;
    case Stmt::Kind::kOutput: {
      absl::StatusOr<Value> value = Eval(*stmt.expr, frame);
      if (!value.ok()) return value.status();
      TEXTGEN_RETURN_IF_ERROR(write(ToText(*value)));
      return Flow::kNormal;
    }
    case Stmt::Kind::kIf:
      for (size_t i = 0; i < stmt.conditions.size(); ++i) {
        absl::StatusOr<Value> condition = Eval(*stmt.conditions[i], frame);
        if (!condition.ok()) return Locate(condition.status(), stmt.conditions[i]->offset);
        if (condition->Truthy()) return ExecBody(stmt.bodies[i], frame);
      }
      return ExecBody(stmt.else_body, frame);
    case Stmt::Kind::kFor:
      return ExecFor(stmt, frame);
    case Stmt::Kind::kSet:
      TEXTGEN_RETURN_IF_ERROR(ExecSet(stmt, frame));
      return Flow::kNormal;
    case Stmt::Kind::kSetBlock:
    case Stmt::Kind::kFilterBlock: {
      absl::StatusOr<Value> body = Capture(stmt.body, frame);
      if (!body.ok()) return body.status();
      Value result = *std::move(body);
      if (stmt.expr) {
        Value saved = std::move(block_input_);
        block_input_ = result;
        absl::StatusOr<Value> filtered = Eval(*stmt.expr, frame);
        block_input_ = std::move(saved);
        if (!filtered.ok()) return filtered.status();
        result = *std::move(filtered);
      }
      if (stmt.kind == Stmt::Kind::kFilterBlock) {
        TEXTGEN_RETURN_IF_ERROR(write(ToText(result)));
      } else {
        frame->vars[stmt.targets[0]] = std::move(result);
      }
      return Flow::kNormal;
    }
    case Stmt::Kind::kMacro:
      frame->vars[stmt.name] = MakeMacro(stmt, frame);
      return Flow::kNormal;
    case Stmt::Kind::kCallBlock: {
      // The call's own arguments, plus `caller` rendering this block's body.
      const Expr& call = *stmt.expr;
      absl::StatusOr<Value> callee = Eval(*call.operands[0], frame);
      if (!callee.ok()) return callee.status();
      absl::StatusOr<CallArgs> args = EvalArgs(call, 1, frame);
      if (!args.ok()) return args.status();
      args->keyword.emplace_back("caller", MakeMacro(stmt, frame));
      absl::StatusOr<Value> result = Call(*callee, *args);
      if (!result.ok()) return result.status();
      TEXTGEN_RETURN_IF_ERROR(write(ToText(*result)));
      return Flow::kNormal;
    }
    case Stmt::Kind::kBreak:
      return Flow::kBreak;
    case Stmt::Kind::kContinue:
      return Flow::kContinue;
    case Stmt::Kind::kScope:
      return ExecBody(stmt.body, frame);
  }
  return Flow::kNormal;
}

absl::Status Interpreter::Assign(const Stmt& stmt, const Value& value, Frame& frame) {
  if (!stmt.unpack) {
    frame.vars[stmt.targets[0]] = value;
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<Value>> items = Iterate(value);
  if (!items.ok()) return items.status();
  if (items->size() != stmt.targets.size()) {
    return TypeError(
        items->size() > stmt.targets.size()
            ? absl::StrCat("too many values to unpack (expected ", stmt.targets.size(), ")")
            : absl::StrCat("not enough values to unpack (expected ", stmt.targets.size(), ", got ",
                           items->size(), ")"));
  }
  for (size_t i = 0; i < items->size(); ++i) frame.vars[stmt.targets[i]] = (*items)[i];
  return absl::OkStatus();
}

absl::Status Interpreter::ExecSet(const Stmt& stmt, const FramePtr& frame) {
  if (!stmt.attribute.empty()) {
    absl::StatusOr<Value> object = Eval(*stmt.expr, frame);
    if (!object.ok()) return object.status();
    if (!object->is_namespace()) {
      return TypeError(absl::StrCat("cannot assign attribute '", stmt.attribute, "' on a ",
                                    object->TypeName(), "; only namespace() objects allow it"));
    }
    absl::StatusOr<Value> value = Eval(*stmt.value, frame);
    if (!value.ok()) return value.status();
    if (value->nesting_depth() > kMaxValueDepth) {
      return TypeError(absl::StrCat("cannot assign '", stmt.attribute, "': the value nests ",
                                    value->nesting_depth(), " lists or dicts deep, more than ",
                                    kMaxValueDepth, " allowed"));
    }
    object->mutable_dict().Set(Value::String(stmt.attribute), *std::move(value));
    return absl::OkStatus();
  }
  absl::StatusOr<Value> value = Eval(*stmt.expr, frame);
  if (!value.ok()) return value.status();
  return Assign(stmt, *value, *frame);
}

absl::StatusOr<Interpreter::Flow> Interpreter::ExecFor(const Stmt& stmt, const FramePtr& frame) {
  absl::StatusOr<Value> iterable = Eval(*stmt.expr, frame);
  if (!iterable.ok()) return iterable.status();
  absl::StatusOr<std::vector<Value>> all = Iterate(*iterable);
  if (!all.ok()) return all.status();
  std::vector<Value> items;
  if (stmt.loop_filter) {
    for (const Value& item : *all) {
      auto scope = std::make_shared<Frame>();
      scope->parent = frame;
      TEXTGEN_RETURN_IF_ERROR(Assign(stmt, item, *scope));
      absl::StatusOr<Value> keep = Eval(*stmt.loop_filter, scope);
      if (!keep.ok()) return keep.status();
      if (keep->Truthy()) items.push_back(item);
    }
  } else {
    items = *std::move(all);
  }
  if (items.empty()) return ExecBody(stmt.else_body, frame);
  const int64_t length = static_cast<int64_t>(items.size());
  // The loop object's keys, made once per loop rather than per iteration.
  enum class LoopKey {
    kIndex,
    kIndex0,
    kRevindex,
    kRevindex0,
    kFirst,
    kLast,
    kLength,
    kDepth,
    kDepth0,
    kPrevitem,
    kNextitem,
    kCycle
  };
  static constexpr const char* kLoopKeyNames[] = {"index",  "index0",   "revindex", "revindex0",
                                                  "first",  "last",     "length",   "depth",
                                                  "depth0", "previtem", "nextitem", "cycle"};
  std::vector<Value> loop_keys;
  for (const char* name : kLoopKeyNames) loop_keys.push_back(Value::String(name));
  for (int64_t i = 0; i < length; ++i) {
    if (++loop_iterations_ > options_.limits.max_loop_iterations) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the template ran more than ", options_.limits.max_loop_iterations, " loop iterations"));
    }
    // Each iteration gets a fresh scope, as in Jinja: a `set` inside does not survive it.
    auto scope = std::make_shared<Frame>();
    scope->parent = frame;
    const Value& item = items[static_cast<size_t>(i)];
    TEXTGEN_RETURN_IF_ERROR(Assign(stmt, item, *scope));
    std::vector<std::pair<Value, Value>> loop;
    loop.reserve(13);
    const auto add = [&](LoopKey key, Value value) {
      loop.emplace_back(loop_keys[static_cast<size_t>(key)], std::move(value));
    };
    add(LoopKey::kIndex, Value::Int(i + 1));
    add(LoopKey::kIndex0, Value::Int(i));
    add(LoopKey::kRevindex, Value::Int(length - i));
    add(LoopKey::kRevindex0, Value::Int(length - i - 1));
    add(LoopKey::kFirst, Value::Bool(i == 0));
    add(LoopKey::kLast, Value::Bool(i == length - 1));
    add(LoopKey::kLength, Value::Int(length));
    add(LoopKey::kDepth, Value::Int(1));
    add(LoopKey::kDepth0, Value::Int(0));
    if (i > 0) add(LoopKey::kPrevitem, items[static_cast<size_t>(i - 1)]);
    if (i + 1 < length) add(LoopKey::kNextitem, items[static_cast<size_t>(i + 1)]);
    add(LoopKey::kCycle,
        Value::MakeCallable(
            Callable{"cycle", [i](CallArgs& args, Interpreter&) -> absl::StatusOr<Value> {
                       if (args.positional.empty()) return TypeError("no items for cycling given");
                       return args.positional[static_cast<size_t>(i) % args.positional.size()];
                     }}));
    scope->vars["loop"] = Value::MakeDict(Dict(std::move(loop)));
    absl::StatusOr<Flow> flow = ExecBody(stmt.body, scope);
    if (!flow.ok()) return flow;
    if (*flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

absl::StatusOr<Value> Interpreter::Capture(const Body& body, const FramePtr& frame) {
  TaintedString* outer = output_;
  TaintedString captured;
  output_ = &captured;
  absl::StatusOr<Flow> flow = ExecBody(body, frame);
  output_ = outer;
  if (!flow.ok()) return flow.status();
  return Value::String(std::move(captured));
}

Value Interpreter::MakeMacro(const Stmt& stmt, const FramePtr& scope) {
  if (closure_scopes_.empty() || closure_scopes_.back() != scope) closure_scopes_.push_back(scope);
  const Stmt* macro = &stmt;
  Frame* frame = scope.get();
  return Value::MakeCallable(Callable{stmt.kind == Stmt::Kind::kMacro ? stmt.name : "caller",
                                      [macro, frame](CallArgs& args, Interpreter& interpreter) {
                                        // A shared_ptr that does not own: the interpreter keeps the
                                        // frame alive.
                                        return interpreter.CallMacro(
                                            *macro, FramePtr(FramePtr(), frame), args);
                                      }});
}

absl::StatusOr<Value> Interpreter::CallMacro(const Stmt& macro, const FramePtr& scope,
                                             CallArgs& args) {
  if (call_depth_ >= options_.limits.max_call_depth) {
    return absl::ResourceExhaustedError(
        absl::StrCat("macro calls nest deeper than ", options_.limits.max_call_depth, " levels"));
  }
  auto frame = std::make_shared<Frame>();
  frame->parent = scope;
  List varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < macro.params.size()) {
      frame->vars[macro.params[i].name] = args.positional[i];
    } else {
      varargs.push_back(args.positional[i]);
    }
  }
  Dict kwargs;
  for (auto& [name, value] : args.keyword) {
    if (name == "caller") {
      frame->vars["caller"] = value;
      continue;
    }
    bool is_param = false;
    for (const MacroParam& param : macro.params) is_param = is_param || param.name == name;
    if (is_param) {
      frame->vars[name] = value;
    } else {
      kwargs.Set(Value::String(name), value);
    }
  }
  for (const MacroParam& param : macro.params) {
    if (frame->vars.contains(param.name)) continue;
    if (param.default_value) {
      absl::StatusOr<Value> value = Eval(*param.default_value, frame);
      if (!value.ok()) return value.status();
      frame->vars[param.name] = *std::move(value);
    } else {
      frame->vars[param.name] =
          Value::MakeUndefined(absl::StrCat("parameter '", param.name, "' was not provided"));
    }
  }
  frame->vars["varargs"] = Value::MakeTuple(std::move(varargs));
  frame->vars["kwargs"] = Value::MakeDict(std::move(kwargs));
  ++call_depth_;
  absl::StatusOr<Value> result = Capture(macro.body, frame);
  --call_depth_;
  return result;
}

absl::StatusOr<Value> Interpreter::Call(const Value& callee, CallArgs& args) {
  if (callee.is_callable()) return callee.callable().call(args, *this);
  if (callee.is_undefined()) return UndefinedError(callee);
  return TypeError(absl::StrCat("'", callee.TypeName(), "' object is not callable"));
}

absl::StatusOr<CallArgs> Interpreter::EvalArgs(const Expr& expr, size_t first,
                                               const FramePtr& frame) {
  CallArgs args;
  for (size_t i = first; i < expr.operands.size(); ++i) {
    absl::StatusOr<Value> value = Eval(*expr.operands[i], frame);
    if (!value.ok()) return value.status();
    args.positional.push_back(*std::move(value));
  }
  for (const auto& [name, value_expr] : expr.keywords) {
    absl::StatusOr<Value> value = Eval(*value_expr, frame);
    if (!value.ok()) return value.status();
    args.keyword.emplace_back(name, *std::move(value));
  }
  return args;
}

absl::StatusOr<Value> Interpreter::EvalCompare(const Expr& expr, const FramePtr& frame) {
  absl::StatusOr<Value> left = Eval(*expr.operands[0], frame);
  if (!left.ok()) return left;
  for (size_t i = 0; i < expr.compare_ops.size(); ++i) {
    absl::StatusOr<Value> right = Eval(*expr.operands[i + 1], frame);
    if (!right.ok()) return right;
    const std::string& op = expr.compare_ops[i];
    absl::StatusOr<bool> holds = op == "in"       ? Contains(*right, *left)
                                 : op == "not in" ? Contains(*right, *left)
                                                  : Compare(op, *left, *right);
    if (!holds.ok()) return holds.status();
    const bool result = op == "not in" ? !*holds : *holds;
    if (!result) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

absl::StatusOr<Value> Interpreter::EvalOperator(const Expr& expr, const FramePtr& frame) {
  absl::StatusOr<Value> left = Eval(*expr.operands[0], frame);
  if (!left.ok()) return left;
  switch (expr.kind) {
    case Expr::Kind::kAnd:
      if (!left->Truthy()) return left;
      return Eval(*expr.operands[1], frame);
    case Expr::Kind::kOr:
      if (left->Truthy()) return left;
      return Eval(*expr.operands[1], frame);
    case Expr::Kind::kUnary: {
      if (expr.name == "not") return Value::Bool(!left->Truthy());
      if (left->is_undefined()) return UndefinedError(*left);
      const bool negate = expr.name == "-";
      if (left->is_int() || left->is_bool()) {
        const int64_t v = left->is_bool() ? left->as_bool() : left->as_int();
        if (negate && v == std::numeric_limits<int64_t>::min())
          return TypeError("integer overflow");
        return Value::Int(negate ? -v : v);
      }
      if (left->is_float()) return Value::Float(negate ? -left->as_float() : left->as_float());
      return TypeError(
          absl::StrCat("bad operand type for unary ", expr.name, ": '", left->TypeName(), "'"));
    }
    default: {
      absl::StatusOr<Value> right = Eval(*expr.operands[1], frame);
      if (!right.ok()) return right;
      return BinaryOp(expr.name, *left, *right, *this);
    }
  }
}

absl::StatusOr<Value> Interpreter::Located(absl::StatusOr<Value> result, const Expr& expr) const {
  if (!result.ok()) return Locate(result.status(), expr.offset);
  return result;
}

absl::StatusOr<Value> Interpreter::EvalCollection(const Expr& expr, const FramePtr& frame) {
  switch (expr.kind) {
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      List items;
      for (const ExprPtr& operand : expr.operands) {
        absl::StatusOr<Value> item = Eval(*operand, frame);
        if (!item.ok()) return item;
        items.push_back(*std::move(item));
      }
      if (expr.kind == Expr::Kind::kTuple) return Value::MakeTuple(std::move(items));
      return Value::MakeList(std::move(items));
    }
    case Expr::Kind::kDict: {
      Dict dict;
      for (size_t i = 0; i + 1 < expr.operands.size(); i += 2) {
        absl::StatusOr<Value> key = Eval(*expr.operands[i], frame);
        if (!key.ok()) return key;
        absl::StatusOr<Value> value = Eval(*expr.operands[i + 1], frame);
        if (!value.ok()) return value;
        if (key->is_list() || key->is_dict()) return TypeError("unhashable type as dict key");
        dict.Set(*std::move(key), *std::move(value));
      }
      return Value::MakeDict(std::move(dict));
    }
    default:
      return absl::InternalError("not a collection expression");
  }
}

absl::StatusOr<Value> Interpreter::EvalAccess(const Expr& expr, const FramePtr& frame) {
  absl::StatusOr<Value> object = Eval(*expr.operands[0], frame);
  if (!object.ok()) return object;
  if (expr.kind == Expr::Kind::kAttribute) return Located(GetAttribute(*object, expr.name), expr);
  if (expr.kind == Expr::Kind::kItem) {
    absl::StatusOr<Value> key = Eval(*expr.operands[1], frame);
    if (!key.ok()) return key;
    return Located(GetItem(*object, *key), expr);
  }
  Value bounds[3];  // a slice: start, stop, step, each optional
  for (int i = 0; i < 3; ++i) {
    if (!expr.operands[i + 1]) continue;
    absl::StatusOr<Value> bound = Eval(*expr.operands[i + 1], frame);
    if (!bound.ok()) return bound;
    bounds[i] = *std::move(bound);
  }
  return Located(GetSlice(*object, bounds[0], bounds[1], bounds[2]), expr);
}

absl::StatusOr<Value> Interpreter::EvalApplication(const Expr& expr, const FramePtr& frame) {
  absl::StatusOr<Value> target = Eval(*expr.operands[0], frame);
  if (!target.ok()) return target;
  absl::StatusOr<CallArgs> args = EvalArgs(expr, 1, frame);
  if (!args.ok()) return args.status();
  if (expr.kind == Expr::Kind::kCall) return Located(Call(*target, *args), expr);
  if (expr.kind == Expr::Kind::kFilter) {
    return Located(ApplyFilter(expr.name, *target, *args, *this), expr);
  }
  absl::StatusOr<bool> passed = ApplyTest(expr.name, *target, *args, *this);  // a test
  if (!passed.ok()) return Locate(passed.status(), expr.offset);
  return Value::Bool(*passed != expr.negated);
}

absl::StatusOr<Value> Interpreter::Eval(const Expr& expr, const FramePtr& frame) {
  absl::StatusOr<Value> result;
  switch (expr.kind) {
    case Expr::Kind::kLiteral:
      return expr.literal;
    case Expr::Kind::kName:
      if (const Value* found = frame->Find(expr.name)) return *found;
      return Value::MakeUndefined(absl::StrCat("'", expr.name, "' is undefined"));
    case Expr::Kind::kBlockInput:
      return block_input_;
    case Expr::Kind::kList:
    case Expr::Kind::kTuple:
    case Expr::Kind::kDict:
      return EvalCollection(expr, frame);
    case Expr::Kind::kAttribute:
    case Expr::Kind::kItem:
    case Expr::Kind::kSlice:
      return EvalAccess(expr, frame);
    case Expr::Kind::kCall:
    case Expr::Kind::kFilter:
    case Expr::Kind::kTest:
      return EvalApplication(expr, frame);
    case Expr::Kind::kCompare:
      result = EvalCompare(expr, frame);
      break;
    case Expr::Kind::kConditional: {
      absl::StatusOr<Value> condition = Eval(*expr.operands[1], frame);
      if (!condition.ok()) return condition;
      if (condition->Truthy()) return Eval(*expr.operands[0], frame);
      if (expr.operands[2]) return Eval(*expr.operands[2], frame);
      return Value::MakeUndefined("the conditional expression has no else branch");
    }
    case Expr::Kind::kAnd:
    case Expr::Kind::kOr:
    case Expr::Kind::kUnary:
    case Expr::Kind::kBinary:
      result = EvalOperator(expr, frame);
      break;
  }
  if (!result.ok()) return Locate(result.status(), expr.offset);
  return result;
}

}  // namespace textgen::model::jinja
