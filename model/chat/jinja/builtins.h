#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/chat/jinja/interpreter.h"
#include "model/chat/jinja/value.h"

// Jinja2's filters and tests and the globals chat templates use, with Jinja2's semantics
// (and Hugging Face's tojson, raise_exception and strftime_now).
namespace textgen::model::jinja {

// value | name(args). Unknown filters are an error.
absl::StatusOr<Value> ApplyFilter(absl::string_view name, const Value& input, CallArgs& args,
                                  Interpreter& interpreter);
// value is name(args). Unknown tests are an error.
absl::StatusOr<bool> ApplyTest(absl::string_view name, const Value& input, CallArgs& args,
                               Interpreter& interpreter);
// range, dict, namespace, joiner, raise_exception, strftime_now.
void AddGlobals(Frame& frame);

}  // namespace textgen::model::jinja
