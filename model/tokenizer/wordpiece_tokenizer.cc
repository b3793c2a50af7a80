#include "model/tokenizer/wordpiece_tokenizer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "model/base/status_macros.h"
#include "model/tokenizer/utf8.h"

namespace textgen::model {
namespace {

constexpr char kWordStart[] = "\xE2\x96\x81";  // "▁", U+2581

}  // namespace

absl::StatusOr<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizer::Create(TokenizerData data) {
  TEXTGEN_RETURN_IF_ERROR(ValidateVocabulary(data, "bert"));
  if (data.sep_id < -1 || data.sep_id >= static_cast<int>(data.tokens.size())) {
    return absl::InvalidArgumentError(absl::StrCat("bert vocabulary: sep_id ", data.sep_id,
                                                   " is outside [-1, ", data.tokens.size(), ")"));
  }
  if (data.unk_id < 0) {
    return absl::InvalidArgumentError(
        "bert vocabulary: no unknown token (tokenizer.ggml.unknown_token_id); WordPiece needs "
        "one for words it cannot cut");
  }
  auto tokenizer = std::unique_ptr<WordPieceTokenizer>(new WordPieceTokenizer(std::move(data)));
  const TokenizerData& d = tokenizer->data_;
  tokenizer->ids_.reserve(d.tokens.size());
  for (size_t id = 0; id < d.tokens.size(); ++id) {
    const int type = tokenizer->TokenType(static_cast<int>(id));
    if (type == TokenizerData::kControl || type == TokenizerData::kUnused) continue;
    tokenizer->ids_.try_emplace(d.tokens[id], static_cast<int>(id));
    tokenizer->max_token_bytes_ = std::max(tokenizer->max_token_bytes_, d.tokens[id].size());
  }
  return tokenizer;
}

WordPieceTokenizer::WordPieceTokenizer(TokenizerData data)
    : VocabularyTokenizer(std::move(data), EncodeRules{.close_with_sep = true}),
      normalization_{.lowercase = data_.lowercase, .strip_accents = data_.strip_accents} {}

void WordPieceTokenizer::EncodeText(std::string_view text, bool /*after_special*/,
                                    std::vector<int>* ids) const {
  for (const std::string& word : BertWords(text, normalization_)) EncodeWord(word, ids);
}

void WordPieceTokenizer::EncodeWord(const std::string& word, std::vector<int>* ids) const {
  const std::string marked = absl::StrCat(kWordStart, word);
  const size_t first = ids->size();
  const size_t n = marked.size();
  for (size_t at = 0; at < n;) {
    // The longest token starting here (tokens are whole UTF-8, so a match ends on a
    // character boundary).
    int match = -1;
    size_t length = std::min(n - at, max_token_bytes_);
    for (; length > 0; --length) {
      auto it = ids_.find(absl::string_view(marked.data() + at, length));
      if (it != ids_.end()) {
        match = it->second;
        break;
      }
    }
    if (match < 0) {  // a part no token covers: the whole word is unknown
      ids->resize(first);
      ids->push_back(data_.unk_id);
      return;
    }
    ids->push_back(match);
    at += length;
  }
}

std::string WordPieceTokenizer::TokenBytes(int id, int /*previous_id*/) const {
  if (id < 0 || id >= vocab_size() || IsControl(id)) return "";
  return absl::StrReplaceAll(data_.tokens[id], {{kWordStart, " "}});
}

std::string WordPieceTokenizer::TokenText(int id) const {
  if (id < 0 || id >= vocab_size()) return absl::StrCat("<invalid id ", id, ">");
  return data_.tokens[id];
}

}  // namespace textgen::model
