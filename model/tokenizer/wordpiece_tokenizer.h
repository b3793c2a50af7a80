#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/bert_words.h"
#include "model/tokenizer/tokenizer_data.h"
#include "model/tokenizer/vocabulary_tokenizer.h"

namespace textgen::model {

// WordPiece (GGUF "bert" vocabularies: BERT, BGE, MiniLM, nomic-embed): the text is normalized
// and split into words (bert_words.h), and each word, with a "▁" in front, is cut greedily
// into the longest vocabulary tokens from left to right (llama.cpp's converter writes a word's
// first piece as "▁piece" and a continuation "##piece" as "piece"); a word with a part no
// token covers becomes [UNK] whole. Encode with add_bos frames the text as BERT does:
// [CLS] ... [SEP]. Immutable after Create(); thread-safe.
class WordPieceTokenizer final : public VocabularyTokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<WordPieceTokenizer>> Create(TokenizerData data);

  // A word's first piece decodes with a space before it ("▁the" -> " the").
  std::string TokenBytes(int id, int previous_id) const override;
  std::string TokenText(int id) const override;

 private:
  explicit WordPieceTokenizer(TokenizerData data);
  void EncodeText(std::string_view text, bool after_special, std::vector<int>* ids) const override;
  void EncodeWord(const std::string& word, std::vector<int>* ids) const;

  BertNormalization normalization_;
  absl::flat_hash_map<std::string, int> ids_;  // token text -> id (normal and unknown tokens)
  size_t max_token_bytes_ = 0;
};

}  // namespace textgen::model
