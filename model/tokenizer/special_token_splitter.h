#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace textgen::model {

// Finds whole special tokens in text before BPE runs, as llama.cpp does: tokens are tried
// longest first over the text not yet claimed, each occurrence becoming its own segment.
// Immutable after construction; thread-safe.
class SpecialTokenSplitter {
 public:
  struct Token {
    std::string text;  // as stored in the vocabulary (not byte-decoded)
    int id = -1;
    bool rstrip = false;  // whitespace right after it is dropped (Phi-3's special tokens)
  };
  struct Segment {
    std::string_view text;  // a view into the input
    int id;                 // the special token's id, or -1 for ordinary text
  };

  SpecialTokenSplitter() = default;
  // The tokens to find; empty texts are ignored.
  explicit SpecialTokenSplitter(std::vector<Token> tokens);

  bool empty() const { return tokens_.empty(); }

  // `text` cut into ordinary and special-token segments, in order.
  std::vector<Segment> Split(std::string_view text) const;

 private:
  std::vector<Token> tokens_;  // longest first
};

}  // namespace textgen::model
