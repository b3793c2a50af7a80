#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/bert_words.h"
#include "model/tokenizer/special_token_splitter.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

// WordPiece (GGUF "bert" vocabularies: BERT, BGE, MiniLM, nomic-embed): the text is normalized
// and split into words (bert_words.h), and each word, with a "▁" in front, is cut greedily
// into the longest vocabulary tokens from left to right (llama.cpp's converter writes a word's
// first piece as "▁piece" and a continuation "##piece" as "piece"); a word with a part no
// token covers becomes [UNK] whole. Encode with add_bos frames the text as BERT does:
// [CLS] ... [SEP]. Immutable after Create(); thread-safe.
class WordPieceTokenizer final : public Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<WordPieceTokenizer>> Create(TokenizerData data);

  // add_bos: the vocabulary's special framing (BOS/[CLS] before, [SEP] after when add_sep).
  std::vector<int> Encode(std::string_view text, bool add_bos) const override;
  std::vector<int> EncodeWithSpecialTokens(std::string_view text, bool add_bos,
                                           std::span<const TextRange> untrusted) const override;
  bool IsControl(int id) const override;
  // A word's first piece decodes with a space before it ("▁the" -> " the").
  std::string TokenBytes(int id, int previous_id) const override;
  int vocab_size() const override { return static_cast<int>(data_.tokens.size()); }
  int bos_id() const override { return data_.bos_id; }
  int eos_id() const override { return data_.eos_id; }
  const std::vector<int>& end_of_generation_ids() const override {
    return data_.end_of_generation_ids;
  }
  std::string TokenText(int id) const override;

 private:
  explicit WordPieceTokenizer(TokenizerData data);
  std::vector<int> EncodeSplitting(std::string_view text, bool add_bos,
                                   const SpecialTokenSplitter& splitter,
                                   std::span<const TextRange> untrusted) const;
  void EncodeText(std::string_view text, std::vector<int>* ids) const;
  void EncodeWord(const std::string& word, std::vector<int>* ids) const;
  int TokenType(int id) const;

  TokenizerData data_;
  BertNormalization normalization_;
  absl::flat_hash_map<std::string, int> ids_;  // token text -> id (normal and unknown tokens)
  size_t max_token_bytes_ = 0;
  SpecialTokenSplitter user_defined_;
  SpecialTokenSplitter user_defined_and_control_;
};

}  // namespace textgen::model
