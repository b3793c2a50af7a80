#pragma once

#include <cstddef>
#include <initializer_list>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "model/chat/jinja/value.h"

namespace textgen::model::jinja {

// The argument at `position`, or the keyword `name`, or `fallback` (Python-style binding).
Value Arg(const CallArgs& args, size_t position, absl::string_view name, Value fallback = Value());
bool HasArg(const CallArgs& args, size_t position, absl::string_view name);

// Refuses more than `max_positional` positional arguments or a keyword not in `keywords`,
// with Python's wording ("split() takes at most 2 arguments (3 given)").
absl::Status CheckArgs(const CallArgs& args, size_t max_positional,
                       std::initializer_list<absl::string_view> keywords,
                       absl::string_view function);

}  // namespace textgen::model::jinja
