#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizer/text_range.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

// Finds whole special tokens in text before BPE runs, as llama.cpp does: tokens are tried
// longest first over the text not yet claimed, each occurrence becoming its own segment.
// Immutable after construction; thread-safe.
class SpecialTokenSplitter {
 public:
  struct Token {
    std::string text;  // as stored in the vocabulary (not byte-decoded)
    int id = -1;
    bool rstrip = false;   // whitespace right after it is dropped (Phi-3's special tokens)
    bool control = false;  // a control token: never matched inside untrusted text
  };
  struct Segment {
    std::string_view text;  // a view into the input
    int id;                 // the special token's id, or -1 for ordinary text
  };

  SpecialTokenSplitter() = default;
  // The tokens to find; empty texts are ignored.
  explicit SpecialTokenSplitter(std::vector<Token> tokens);

  bool empty() const { return tokens_.empty(); }

  // `text` cut into ordinary and special-token segments, in order. Control tokens that
  // overlap an `untrusted` range (sorted, disjoint) are left as ordinary text.
  std::vector<Segment> Split(std::string_view text,
                             std::span<const TextRange> untrusted = {}) const;

 private:
  std::vector<Token> tokens_;  // longest first
};

// A vocabulary's user-defined tokens (llama.cpp matches them whole in any text), and its
// control tokens too when `control`, by their stored text; rstrip as data.rstrip_ids says.
std::vector<SpecialTokenSplitter::Token> VocabularySpecialTokens(const TokenizerData& data,
                                                                 bool control);

}  // namespace textgen::model
