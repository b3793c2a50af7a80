#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace textgen::model {

// Finds whole special tokens in text before BPE runs, as llama.cpp does: tokens are tried
// longest first over the text not yet claimed, each occurrence becoming its own segment.
// Immutable after construction; thread-safe.
class SpecialTokenSplitter {
 public:
  struct Segment {
    std::string_view text;  // a view into the input
    int id;                 // the special token's id, or -1 for ordinary text
  };

  // `tokens`: (text, id) of the tokens to find; empty texts are ignored.
  explicit SpecialTokenSplitter(std::vector<std::pair<std::string, int>> tokens);

  bool empty() const { return tokens_.empty(); }

  // `text` cut into ordinary and special-token segments, in order.
  std::vector<Segment> Split(std::string_view text) const;

 private:
  std::vector<std::pair<std::string, int>> tokens_;  // longest first
};

}  // namespace textgen::model
