// Functions every template can call: Jinja2's range, dict, namespace and joiner, and the
// raise_exception and strftime_now that Hugging Face adds for chat templates.
#include <ctime>
#include <memory>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/chat/jinja/builtins.h"
#include "model/chat/jinja/call_args.h"
#include "model/chat/jinja/operators.h"
#include "model/chat/jinja/python_text.h"

namespace textgen::model::jinja {
namespace {

absl::StatusOr<Value> Range(CallArgs& args, Interpreter& interpreter) {
  if (!args.keyword.empty()) return TypeError("range() takes no keyword arguments");
  if (args.positional.empty() || args.positional.size() > 3) {
    return TypeError(absl::StrCat("range expected 1 to 3 arguments, got ", args.positional.size()));
  }
  int64_t bounds[3] = {0, 0, 1};
  for (size_t i = 0; i < args.positional.size(); ++i) {
    const Value& v = args.positional[i];
    if (!v.is_int() && !v.is_bool()) {
      return TypeError(
          absl::StrCat("'", v.TypeName(), "' object cannot be interpreted as an integer"));
    }
    const int64_t n = v.is_bool() ? v.as_bool() : v.as_int();
    if (args.positional.size() == 1) {
      bounds[1] = n;
    } else {
      bounds[i] = n;
    }
  }
  const auto [start, stop, step] = bounds;
  if (step == 0) return TypeError("range() arg 3 must not be zero");
  // Count first: a huge range is refused before anything is built.
  int64_t count = 0;
  if (step > 0 && start < stop) count = (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) count = (start - stop - 1) / (-step) + 1;
  TEXTGEN_RETURN_IF_ERROR(interpreter.CheckItems(count));
  List out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0, value = start; i < count; ++i, value += step)
    out.push_back(Value::Int(value));
  return Value::MakeList(std::move(out));
}

Dict KeywordDict(const CallArgs& args) {
  Dict dict;
  for (const auto& [key, value] : args.keyword) dict.Set(Value::String(key), value);
  return dict;
}

absl::StatusOr<Value> Namespace(CallArgs& args, Interpreter& interpreter) {
  Dict dict;
  if (args.positional.size() > 1)
    return TypeError("namespace() takes at most one positional argument");
  if (!args.positional.empty()) {
    if (!args.positional[0].is_dict()) return TypeError("namespace() argument must be a mapping");
    dict = args.positional[0].dict();
  }
  for (const auto& [key, value] : args.keyword) dict.Set(Value::String(key), value);
  Value ns = Value::MakeNamespace(std::move(dict));
  interpreter.TrackNamespace(ns);
  return ns;
}

absl::StatusOr<Value> RaiseException(CallArgs& args, Interpreter&) {
  const std::string message = args.positional.empty() ? "" : PyStr(args.positional[0]);
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kRaisedByTemplatePayload, absl::Cord(message));
  return status;
}

absl::StatusOr<Value> StrftimeNow(CallArgs& args, Interpreter& interpreter) {
  if (args.positional.size() != 1 || !args.positional[0].is_string()) {
    return TypeError("strftime_now() takes one format string");
  }
  const std::string& format = args.positional[0].str();
  if (format.size() > 256) return TypeError("strftime_now() format is too long");
  const time_t now = static_cast<time_t>(interpreter.NowUnixSeconds());
  std::tm local{};
  localtime_r(&now, &local);
  std::string out(format.size() * 16 + 64, '\0');
  const size_t n = std::strftime(out.data(), out.size(), format.c_str(), &local);
  out.resize(n);
  return Value::String(std::move(out));
}

absl::StatusOr<Value> Joiner(CallArgs& args, Interpreter&) {
  const Value separator = Arg(args, 0, "sep", Value::String(", "));
  auto used = std::make_shared<bool>(false);
  return Value::MakeCallable(
      Callable{"joiner", [separator, used](CallArgs&, Interpreter&) -> absl::StatusOr<Value> {
                 if (!*used) {
                   *used = true;
                   return Value::String("");
                 }
                 return separator;
               }});
}

}  // namespace

void AddGlobals(Frame& frame) {
  frame.vars["range"] = Value::MakeCallable(Callable{"range", Range});
  frame.vars["dict"] = Value::MakeCallable(
      Callable{"dict", [](CallArgs& args, Interpreter&) -> absl::StatusOr<Value> {
                 if (!args.positional.empty())
                   return TypeError("dict() takes keyword arguments only here");
                 return Value::MakeDict(KeywordDict(args));
               }});
  frame.vars["namespace"] = Value::MakeCallable(Callable{"namespace", Namespace});
  frame.vars["joiner"] = Value::MakeCallable(Callable{"joiner", Joiner});
  frame.vars["raise_exception"] = Value::MakeCallable(Callable{"raise_exception", RaiseException});
  frame.vars["strftime_now"] = Value::MakeCallable(Callable{"strftime_now", StrftimeNow});
}

}  // namespace textgen::model::jinja
