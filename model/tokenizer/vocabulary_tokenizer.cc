#include "model/tokenizer/vocabulary_tokenizer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_replace.h"
#include "model/tokenizer/utf8.h"

namespace textgen::model {

VocabularyTokenizer::VocabularyTokenizer(TokenizerData data, EncodeRules rules)
    : data_(std::move(data)), rules_(rules) {
  FindSpecialTokens();
}

void VocabularyTokenizer::FindSpecialTokens() {
  std::vector<SpecialTokenSplitter::Token> user_defined = VocabularySpecialTokens(data_, false);
  std::vector<SpecialTokenSplitter::Token> special = VocabularySpecialTokens(data_, true);
  if (rules_.space_symbol_is_space) {
    for (auto* tokens : {&user_defined, &special}) {
      for (SpecialTokenSplitter::Token& token : *tokens) {
        token.text = absl::StrReplaceAll(token.text, {{"\xE2\x96\x81", " "}});
      }
    }
  }
  user_defined_ = SpecialTokenSplitter(std::move(user_defined));
  user_defined_and_control_ = SpecialTokenSplitter(std::move(special));
}

std::vector<int> VocabularyTokenizer::Encode(std::string_view text, bool add_bos) const {
  return EncodeSplitting(text, add_bos, user_defined_, {});
}

std::vector<int> VocabularyTokenizer::EncodeWithSpecialTokens(
    std::string_view text, bool add_bos, std::span<const TextRange> untrusted) const {
  return EncodeSplitting(text, add_bos, user_defined_and_control_, untrusted);
}

std::vector<int> VocabularyTokenizer::EncodeSplitting(std::string_view text, bool add_bos,
                                                      const SpecialTokenSplitter& splitter,
                                                      std::span<const TextRange> untrusted) const {
  std::vector<int> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_bos && data_.bos_id >= 0) ids.push_back(data_.bos_id);
  std::string repaired;
  if (rules_.repair_utf8 && !IsValidUtf8(text)) {
    repaired = SanitizeUtf8(text);
    text = repaired;
  }
  if (splitter.empty()) {
    EncodeText(text, /*after_special=*/true, &ids);
  } else {
    bool after_special = true;  // the start of the input counts as "after a special token"
    for (const SpecialTokenSplitter::Segment& segment : splitter.Split(text, untrusted)) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
        after_special = true;
      } else {
        EncodeText(segment.text, after_special, &ids);
        after_special = false;
      }
    }
  }
  if (rules_.close_with_sep && add_bos && data_.add_sep && data_.sep_id >= 0) {
    ids.push_back(data_.sep_id);
  }
  return ids;
}

}  // namespace textgen::model
