#include "model/chat/jinja/operators.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/chat/jinja/interpreter.h"
#include "model/chat/jinja/python_text.h"

namespace textgen::model::jinja {
namespace {

// BoundMethod's answer names an attribute: a method, or an unsafe one (an Undefined that
// says why), not "no such method".
bool IsAttribute(const Value& method) {
  return !method.is_undefined() || !method.undefined_reason().empty();
}

bool IsIntLike(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t IntOf(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
bool IsNumeric(const Value& v) { return v.is_number() || v.is_bool(); }

absl::Status Unsupported(absl::string_view op, const Value& left, const Value& right) {
  return TypeError(absl::StrCat("unsupported operand type(s) for ", op, ": '", left.TypeName(),
                                "' and '", right.TypeName(), "'"));
}

absl::StatusOr<Value> Arithmetic(absl::string_view op, const Value& left, const Value& right) {
  if (IsIntLike(left) && IsIntLike(right)) {
    const int64_t a = IntOf(left);
    const int64_t b = IntOf(right);
    int64_t result = 0;
    bool overflow = false;
    if (op == "+") {
      overflow = __builtin_add_overflow(a, b, &result);
    } else if (op == "-") {
      overflow = __builtin_sub_overflow(a, b, &result);
    } else if (op == "*") {
      overflow = __builtin_mul_overflow(a, b, &result);
    } else if (op == "/") {
      if (b == 0) return TypeError("division by zero");
      return Value::Float(static_cast<double>(a) / static_cast<double>(b));
    } else if (op == "//" || op == "%") {
      if (b == 0) return TypeError("integer division or modulo by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) {
        return TypeError("integer overflow");
      }
      int64_t quotient = a / b;
      int64_t remainder = a % b;
      if (remainder != 0 && ((remainder < 0) != (b < 0))) {  // Python floors
        --quotient;
        remainder += b;
      }
      return Value::Int(op == "//" ? quotient : remainder);
    } else if (op == "**") {
      if (b < 0) return Value::Float(std::pow(static_cast<double>(a), static_cast<double>(b)));
      result = 1;
      for (int64_t i = 0; i < b && !overflow; ++i) {
        overflow = __builtin_mul_overflow(result, a, &result);
        if (result == 0 || result == 1) break;
      }
      if (a == -1) result = b % 2 == 0 ? 1 : -1;
    }
    if (overflow) return TypeError("integer overflow");
    return Value::Int(result);
  }
  const double a = left.as_double();
  const double b = right.as_double();
  if (op == "+") return Value::Float(a + b);
  if (op == "-") return Value::Float(a - b);
  if (op == "*") return Value::Float(a * b);
  if (op == "/") {
    if (b == 0) return TypeError("float division by zero");
    return Value::Float(a / b);
  }
  if (op == "//" || op == "%") {
    if (b == 0) return TypeError("float modulo");
    double remainder = std::fmod(a, b);
    if (remainder != 0 && ((remainder < 0) != (b < 0))) remainder += b;
    if (op == "%") return Value::Float(remainder);
    return Value::Float(std::floor(a / b));
  }
  return Value::Float(std::pow(a, b));
}

// s * n and list * n, sized before building.
absl::StatusOr<Value> Repeat(const Value& sequence, int64_t times, Interpreter& interpreter) {
  if (times < 0) times = 0;
  const size_t unit = sequence.is_string() ? sequence.str().size() : sequence.list().size();
  // Nothing to repeat: no loop either ([] * 10**14 spun for hours; fuzz-found).
  if (unit == 0) times = 0;
  const bool too_big = unit > 0 && static_cast<uint64_t>(times) > (uint64_t{1} << 40) / unit;
  const size_t total =
      too_big ? std::numeric_limits<size_t>::max() : unit * static_cast<size_t>(times);
  if (sequence.is_string()) {
    TEXTGEN_RETURN_IF_ERROR(interpreter.Charge(total));
    std::string out;
    out.reserve(total);
    for (int64_t i = 0; i < times; ++i) out += sequence.str();
    return DerivedString(std::move(out), {&sequence});
  }
  if (absl::Status s = interpreter.CheckItems(
          static_cast<int64_t>(std::min<size_t>(total, std::numeric_limits<int64_t>::max())));
      !s.ok()) {
    return s;
  }
  List out;
  out.reserve(total);
  for (int64_t i = 0; i < times; ++i) {
    out.insert(out.end(), sequence.list().begin(), sequence.list().end());
  }
  return Value::MakeList(std::move(out));
}

// Python slice bounds for a sequence of n items.
absl::StatusOr<std::vector<int64_t>> SliceIndices(int64_t n, const Value& start_value,
                                                  const Value& stop_value,
                                                  const Value& step_value) {
  const auto as_index = [](const Value& v,
                           const char* what) -> absl::StatusOr<std::optional<int64_t>> {
    if (v.is_none() || v.is_undefined()) return std::optional<int64_t>();
    if (!IsIntLike(v)) {
      return TypeError(
          absl::StrCat("slice ", what, " must be an integer or None, not ", v.TypeName()));
    }
    return std::optional<int64_t>(IntOf(v));
  };
  absl::StatusOr<std::optional<int64_t>> start = as_index(start_value, "start");
  if (!start.ok()) return start.status();
  absl::StatusOr<std::optional<int64_t>> stop = as_index(stop_value, "stop");
  if (!stop.ok()) return stop.status();
  absl::StatusOr<std::optional<int64_t>> step_opt = as_index(step_value, "step");
  if (!step_opt.ok()) return step_opt.status();
  const int64_t step = step_opt->value_or(1);
  if (step == 0) return TypeError("slice step cannot be zero");
  const auto clamp = [&](std::optional<int64_t> index, int64_t fallback) {
    if (!index) return fallback;
    int64_t i = *index;
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t first = clamp(*start, step > 0 ? 0 : n - 1);
  const int64_t last = clamp(*stop, step > 0 ? n : -1);
  std::vector<int64_t> indices;
  for (int64_t i = first; step > 0 ? i < last : i > last; i += step) indices.push_back(i);
  return indices;
}

}  // namespace

std::string HtmlEscape(absl::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

absl::Status TypeError(absl::string_view message) { return absl::InvalidArgumentError(message); }

absl::Status UndefinedError(const Value& undefined) {
  return absl::InvalidArgumentError(
      undefined.undefined_reason().empty() ? "a value is undefined" : undefined.undefined_reason());
}

namespace {

// A namespace may hold itself, so the walk is bounded: past this depth, or after this many
// values, the value counts as tainted (the safe answer: its text then never yields control
// tokens).
constexpr int kMaxTaintDepth = 200;
constexpr int64_t kMaxTaintWalk = int64_t{1} << 20;

bool DeepTaintedWithin(const Value& value, int depth, int64_t* budget) {
  if (depth > kMaxTaintDepth || --*budget < 0) return true;
  switch (value.kind()) {
    case Value::Kind::kString:
      return value.tainted_str().tainted();
    case Value::Kind::kList:
      for (const Value& item : value.list()) {
        if (DeepTaintedWithin(item, depth + 1, budget)) return true;
      }
      return false;
    case Value::Kind::kDict:
      for (const auto& [key, item] : value.dict().entries()) {
        if (DeepTaintedWithin(key, depth + 1, budget) ||
            DeepTaintedWithin(item, depth + 1, budget)) {
          return true;
        }
      }
      return false;
    default:
      return false;
  }
}

}  // namespace

bool DeepTainted(const Value& value) {
  int64_t budget = kMaxTaintWalk;
  return DeepTaintedWithin(value, 0, &budget);
}

TaintedString ToText(const Value& value) {
  if (value.is_string()) return value.tainted_str();
  TaintedString out{PyStr(value), {}};
  if (DeepTainted(value) && !out.bytes.empty()) out.taint.push_back({0, out.bytes.size()});
  return out;
}

Value DerivedString(std::string bytes, std::initializer_list<const Value*> inputs) {
  bool tainted = false;
  for (const Value* input : inputs) tainted = tainted || DeepTainted(*input);
  return tainted ? Value::Tainted(std::move(bytes)) : Value::String(std::move(bytes));
}

void AppendText(const TaintedString& part, TaintedString* out) {
  const size_t base = out->bytes.size();
  for (const TaintRange& range : part.taint) {
    if (!out->taint.empty() && out->taint.back().end == base + range.begin) {
      out->taint.back().end = base + range.end;  // adjacent ranges merge
    } else {
      out->taint.push_back({base + range.begin, base + range.end});
    }
  }
  out->bytes += part.bytes;
}

Value Substring(const Value& string, size_t begin, size_t end) {
  const TaintedString& source = string.tainted_str();
  return Value::String(
      TaintedString{source.bytes.substr(begin, end - begin), source.TaintOf(begin, end)});
}

absl::StatusOr<Value> BinaryOp(absl::string_view op, const Value& left, const Value& right,
                               Interpreter& interpreter) {
  if (op == "~") {
    TaintedString out = ToText(left);
    AppendText(ToText(right), &out);
    TEXTGEN_RETURN_IF_ERROR(interpreter.Charge(out.bytes.size()));
    return Value::String(std::move(out));
  }
  if (left.is_undefined()) return UndefinedError(left);
  if (right.is_undefined()) return UndefinedError(right);
  if (IsNumeric(left) && IsNumeric(right)) return Arithmetic(op, left, right);
  if (op == "+" && left.is_string() && right.is_string() &&
      (left.is_markup() || right.is_markup())) {
    // Markup + str escapes the plain operand (markupsafe).
    const auto escaped = [](const Value& v) {
      return v.is_markup() ? v.str() : HtmlEscape(v.str());
    };
    Value joined = DerivedString(escaped(left) + escaped(right), {&left, &right});
    TEXTGEN_RETURN_IF_ERROR(interpreter.Charge(joined.str().size()));
    return Value::Markup(joined.tainted_str());
  }
  if (op == "+" && left.is_string() && right.is_string()) {
    TaintedString out = left.tainted_str();
    AppendText(right.tainted_str(), &out);
    TEXTGEN_RETURN_IF_ERROR(interpreter.Charge(out.bytes.size()));
    return Value::String(std::move(out));
  }
  if (op == "+" && left.is_list() && right.is_list()) {
    List out = left.list();
    out.insert(out.end(), right.list().begin(), right.list().end());
    return Value::MakeList(std::move(out));
  }
  if (op == "*") {
    if ((left.is_string() || left.is_list()) && IsIntLike(right)) {
      return Repeat(left, IntOf(right), interpreter);
    }
    if ((right.is_string() || right.is_list()) && IsIntLike(left)) {
      return Repeat(right, IntOf(left), interpreter);
    }
  }
  if (op == "+" && left.is_string()) {
    return TypeError(
        absl::StrCat("can only concatenate str (not \"", right.TypeName(), "\") to str"));
  }
  return Unsupported(op, left, right);
}

absl::StatusOr<bool> LessThan(const Value& left, const Value& right) {
  if (IsNumeric(left) && IsNumeric(right)) {
    if (IsIntLike(left) && IsIntLike(right)) return IntOf(left) < IntOf(right);
    return left.as_double() < right.as_double();
  }
  if (left.is_string() && right.is_string()) return left.str() < right.str();  // code point order
  if (left.is_list() && right.is_list()) {
    const List& a = left.list();
    const List& b = right.list();
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (a[i].Equals(b[i])) continue;
      return LessThan(a[i], b[i]);
    }
    return a.size() < b.size();
  }
  return TypeError(absl::StrCat("'<' not supported between instances of '", left.TypeName(),
                                "' and '", right.TypeName(), "'"));
}

absl::StatusOr<bool> Compare(absl::string_view op, const Value& left, const Value& right) {
  if (op == "==") return left.Equals(right);
  if (op == "!=") return !left.Equals(right);
  if (left.is_undefined()) return UndefinedError(left);
  if (right.is_undefined()) return UndefinedError(right);
  if (op == "<") return LessThan(left, right);
  if (op == ">") return LessThan(right, left);
  absl::StatusOr<bool> less = op == "<=" ? LessThan(right, left) : LessThan(left, right);
  if (!less.ok()) {
    return TypeError(absl::StrCat("'", op, "' not supported between instances of '",
                                  left.TypeName(), "' and '", right.TypeName(), "'"));
  }
  return !*less;  // a <= b is not (b < a)
}

absl::StatusOr<bool> Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kString:
      if (!item.is_string()) {
        return TypeError(
            absl::StrCat("'in <string>' requires string as left operand, not ", item.TypeName()));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& element : container.list()) {
        if (element.Equals(item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return container.dict().Find(item) != nullptr;
    case Value::Kind::kUndefined:
      return false;
    default:
      return TypeError(
          absl::StrCat("argument of type '", container.TypeName(), "' is not iterable"));
  }
}

absl::StatusOr<std::vector<Value>> Iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kList:
      return value.list();
    case Value::Kind::kDict: {
      if (value.is_namespace()) return TypeError("'Namespace' object is not iterable");
      std::vector<Value> keys;
      for (const auto& [key, item] : value.dict().entries()) keys.push_back(key);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> characters;
      const std::string& text = value.str();
      for (size_t offset = 0; offset < text.size();) {
        const size_t begin = offset;
        DecodeCodePoint(text, &offset);
        characters.push_back(Substring(value, begin, offset));
      }
      return characters;
    }
    case Value::Kind::kUndefined:
      return std::vector<Value>();
    default:
      return TypeError(absl::StrCat("'", value.TypeName(), "' object is not iterable"));
  }
}

absl::StatusOr<Value> GetAttribute(const Value& object, absl::string_view name) {
  if (object.is_undefined()) return UndefinedError(object);
  if (object.is_dict()) {
    if (object.is_namespace()) {
      if (const Value* found = object.dict().Find(name)) return *found;
      return Value::MakeUndefined(absl::StrCat("'Namespace' object has no attribute '", name, "'"));
    }
    // Python finds a dict's methods before its keys ("d.items" is the method).
    if (Value method = BoundMethod(object, name); IsAttribute(method)) return method;
    if (const Value* found = object.dict().Find(name)) return *found;
    return Value::MakeUndefined(absl::StrCat("'dict object' has no attribute '", name, "'"));
  }
  if (Value method = BoundMethod(object, name); IsAttribute(method)) return method;
  return Value::MakeUndefined(
      absl::StrCat("'", object.TypeName(), " object' has no attribute '", name, "'"));
}

absl::StatusOr<Value> GetItem(const Value& object, const Value& key) {
  if (object.is_undefined()) return UndefinedError(object);
  if (object.is_generator()) return TypeError("'generator' object is not subscriptable");
  if (object.is_dict() && !object.is_namespace()) {
    if (const Value* found = object.dict().Find(key)) return *found;
  } else if ((object.is_list() || object.is_string()) && IsIntLike(key)) {
    int64_t index = IntOf(key);
    if (object.is_list()) {
      const int64_t n = static_cast<int64_t>(object.list().size());
      if (index < 0) index += n;
      if (index >= 0 && index < n) return object.list()[static_cast<size_t>(index)];
    } else {
      const std::vector<size_t> starts = CodePointStarts(object.str());
      const int64_t n = static_cast<int64_t>(starts.size());
      if (index < 0) index += n;
      if (index >= 0 && index < n) {
        const size_t begin = starts[static_cast<size_t>(index)];
        const size_t end =
            index + 1 < n ? starts[static_cast<size_t>(index + 1)] : object.str().size();
        return Substring(object, begin, end);
      }
    }
    return Value::MakeUndefined(
        absl::StrCat("'", object.TypeName(), " object' has no element ", IntOf(key)));
  }
  if (key.is_string()) return GetAttribute(object, key.str());
  return Value::MakeUndefined(
      absl::StrCat("'", object.TypeName(), " object' has no element ", PyRepr(key)));
}

absl::StatusOr<Value> GetSlice(const Value& object, const Value& start, const Value& stop,
                               const Value& step) {
  if (object.is_undefined()) return UndefinedError(object);
  if (object.is_generator()) return TypeError("'generator' object is not subscriptable");
  if (object.is_list()) {
    absl::StatusOr<std::vector<int64_t>> indices =
        SliceIndices(static_cast<int64_t>(object.list().size()), start, stop, step);
    if (!indices.ok()) return indices.status();
    List out;
    out.reserve(indices->size());
    for (int64_t i : *indices) out.push_back(object.list()[static_cast<size_t>(i)]);
    return Value::MakeList(std::move(out));
  }
  if (object.is_string()) {
    const std::string& text = object.str();
    std::vector<size_t> starts = CodePointStarts(text);
    absl::StatusOr<std::vector<int64_t>> indices =
        SliceIndices(static_cast<int64_t>(starts.size()), start, stop, step);
    if (!indices.ok()) return indices.status();
    starts.push_back(text.size());
    const bool contiguous =
        step.is_none() || step.is_undefined() || (IsIntLike(step) && IntOf(step) == 1);
    if (contiguous) {
      if (indices->empty()) return Value::String("");
      return Substring(object, starts[indices->front()], starts[indices->back() + 1]);
    }
    std::string out;
    for (int64_t i : *indices) {
      out += text.substr(starts[i], starts[i + 1] - starts[i]);
    }
    return DerivedString(std::move(out), {&object});
  }
  return TypeError(absl::StrCat("'", object.TypeName(), "' object is not subscriptable"));
}

}  // namespace textgen::model::jinja
