#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "model/tokenizer/special_token_splitter.h"
#include "model/tokenizer/text_range.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

// The encode path every vocabulary shares, so each rule has one owner: BOS in front, invalid
// UTF-8 repaired, user-defined (and, when asked, control) tokens cut out whole, each plain
// segment handed to the subclass's EncodeText, and BERT's closing [SEP]. Also the accessors
// that only read the vocabulary's data.
class VocabularyTokenizer : public Tokenizer {
 public:
  std::vector<int> Encode(std::string_view text, bool add_bos) const final;
  std::vector<int> EncodeWithSpecialTokens(std::string_view text, bool add_bos,
                                           std::span<const TextRange> untrusted) const final;
  bool IsControl(int id) const final {
    return id >= 0 && id < vocab_size() && TokenType(id) == TokenizerData::kControl;
  }
  int vocab_size() const final { return static_cast<int>(data_.tokens.size()); }
  int bos_id() const final { return data_.bos_id; }
  int eos_id() const final { return data_.eos_id; }
  const std::vector<int>& end_of_generation_ids() const final {
    return data_.end_of_generation_ids;
  }

 protected:
  // Where vocabularies differ in the shared path.
  struct EncodeRules {
    // Invalid UTF-8 becomes U+FFFD first (callers reject it; a regex pre-tokenizer must never
    // see it). SentencePiece keeps the bytes: its byte fallback encodes them as they are.
    bool repair_utf8 = true;
    // With add_bos, [SEP] closes the text when the vocabulary says add_sep (WordPiece).
    bool close_with_sep = false;
    // Special tokens are matched with "▁" in their stored text read as a space (SentencePiece).
    bool space_symbol_is_space = false;
  };

  VocabularyTokenizer(TokenizerData data, EncodeRules rules);

  // Builds the special-token splitters from data_'s token types; a subclass that derives the
  // types calls it again once they are final.
  void FindSpecialTokens();
  // Appends the ids of ordinary text (no special tokens in it). `after_special`: the text
  // starts the input or follows a special token (SentencePiece's dummy prefix goes there).
  virtual void EncodeText(std::string_view text, bool after_special,
                          std::vector<int>* ids) const = 0;
  int TokenType(int id) const {
    return data_.token_types.empty() ? TokenizerData::kNormal : data_.token_types[id];
  }

  TokenizerData data_;

 private:
  std::vector<int> EncodeSplitting(std::string_view text, bool add_bos,
                                   const SpecialTokenSplitter& splitter,
                                   std::span<const TextRange> untrusted) const;

  const EncodeRules rules_;
  SpecialTokenSplitter user_defined_{{}};              // tokens matched in any text
  SpecialTokenSplitter user_defined_and_control_{{}};  // ... and when parsing special tokens
};

}  // namespace textgen::model
