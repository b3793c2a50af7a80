// Jinja2's tests: `value is defined`, `value is divisibleby 3`, ...
#include <cmath>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja/builtins.h"
#include "model/chat/jinja/call_args.h"
#include "model/chat/jinja/operators.h"
#include "model/chat/jinja/python_text.h"

namespace textgen::model::jinja {

absl::StatusOr<bool> ApplyTest(absl::string_view name, const Value& input, CallArgs& args,
                               Interpreter& interpreter) {
  const Value arg = Arg(args, 0, "");
  if (name == "defined") return !input.is_undefined();
  if (name == "undefined") return input.is_undefined();
  if (name == "none") return input.is_none();
  if (name == "boolean") return input.is_bool();
  if (name == "false") return input.is_bool() && !input.as_bool();
  if (name == "true") return input.is_bool() && input.as_bool();
  if (name == "integer") return input.is_int();
  if (name == "float") return input.is_float();
  if (name == "number") return input.is_number() || input.is_bool();
  if (name == "string") return input.is_string();
  if (name == "mapping") return input.is_dict() && !input.is_namespace();
  if (name == "iterable")
    return input.is_string() || input.is_list() || input.is_dict() || input.is_undefined();
  if (name == "sequence") {
    return input.is_string() || (input.is_list() && !input.is_generator()) ||
           input.is_undefined() || (input.is_dict() && !input.is_namespace());
  }
  if (name == "callable") return input.is_callable();
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") {
    if (!input.is_string()) return TypeError(absl::StrCat("test '", name, "' needs a string"));
    return name == "lower" ? PyLower(input.str()) == input.str()
                           : PyUpper(input.str()) == input.str();
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!input.is_int() && !input.is_bool()) {
      return TypeError(absl::StrCat("test '", name, "' needs an integer, got ", input.TypeName()));
    }
    const int64_t value = input.is_bool() ? input.as_bool() : input.as_int();
    if (name == "odd") return value % 2 != 0;
    if (name == "even") return value % 2 == 0;
    if (!arg.is_int() || arg.as_int() == 0)
      return TypeError("divisibleby needs a non-zero integer");
    return value % arg.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return input.Equals(arg);
  if (name == "ne" || name == "!=") return !input.Equals(arg);
  if (name == "lt" || name == "lessthan" || name == "<") return Compare("<", input, arg);
  if (name == "le" || name == "<=") return Compare("<=", input, arg);
  if (name == "gt" || name == "greaterthan" || name == ">") return Compare(">", input, arg);
  if (name == "ge" || name == ">=") return Compare(">=", input, arg);
  if (name == "in") return Contains(arg, input);
  if (name == "sameas") {
    if (input.kind() != arg.kind()) return false;
    if (input.is_none() || input.is_undefined()) return true;
    if (input.is_bool()) return input.as_bool() == arg.as_bool();
    if (input.is_list()) return &input.list() == &arg.list();
    if (input.is_dict()) return &input.dict() == &arg.dict();
    return input.Equals(arg);
  }
  if (name == "filter" || name == "test") {
    return TypeError(absl::StrCat("test '", name, "' is not supported"));
  }
  return TypeError(absl::StrCat("no test named '", name, "'"));
}

}  // namespace textgen::model::jinja
