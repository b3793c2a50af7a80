#pragma once

#include <cstddef>

namespace textgen::model {

// Bytes [begin, end) of a text.
struct TextRange {
  size_t begin = 0;
  size_t end = 0;
};

}  // namespace textgen::model
