#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace textgen::model {

// BERT's text normalizer and pre-tokenizer (Hugging Face's BertNormalizer + BertPreTokenizer,
// as llama.cpp's WPM tokenizer applies them): control characters, U+0000 and U+FFFD are
// dropped; with `strip_accents` each character is canonically decomposed (NFD) and combining
// marks are dropped; with `lowercase` the rest is lowercased; the text is split at whitespace,
// and every punctuation character, ASCII symbol and CJK ideograph becomes a word of its own.
// Unicode data comes from utf8proc. Pure function; thread-safe. `text` must be valid UTF-8.
struct BertNormalization {
  bool lowercase = true;
  bool strip_accents = true;
};
std::vector<std::string> BertWords(std::string_view text, const BertNormalization& normalization);

}  // namespace textgen::model
