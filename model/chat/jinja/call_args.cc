#include "model/chat/jinja/call_args.h"

#include "absl/strings/str_cat.h"

namespace textgen::model::jinja {

Value Arg(const CallArgs& args, size_t position, absl::string_view name, Value fallback) {
  if (position < args.positional.size()) return args.positional[position];
  for (const auto& [key, value] : args.keyword) {
    if (key == name) return value;
  }
  return fallback;
}

bool HasArg(const CallArgs& args, size_t position, absl::string_view name) {
  if (position < args.positional.size()) return true;
  for (const auto& [key, value] : args.keyword) {
    if (key == name) return true;
  }
  return false;
}

absl::Status CheckArgs(const CallArgs& args, size_t max_positional,
                       std::initializer_list<absl::string_view> keywords,
                       absl::string_view function) {
  if (args.positional.size() > max_positional) {
    return absl::InvalidArgumentError(absl::StrCat(function, "() takes at most ", max_positional,
                                                   " arguments (", args.positional.size(),
                                                   " given)"));
  }
  for (const auto& [key, value] : args.keyword) {
    bool known = false;
    for (absl::string_view name : keywords) known = known || key == name;
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat(function, "() got an unexpected keyword argument '", key, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace textgen::model::jinja
