#pragma once

// How deeply a JSON text nests, counted before parsing it: recursive parsers (and the
// recursive destructors of the trees they build) must never see a document deep enough to
// exhaust the stack.

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace textgen::model {

// The deepest nesting of [ and { outside strings (no validation: garbage counts too).
inline int JsonNestingDepth(std::string_view json) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace textgen::model
