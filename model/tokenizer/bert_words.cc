#include "model/tokenizer/bert_words.h"

#include <utf8proc.h>

#include <array>

namespace textgen::model {
namespace {

// Unicode's White_Space property (the code points llama.cpp and Hugging Face split at).
bool IsWhitespace(utf8proc_int32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// The CJK ideograph blocks BERT isolates (the ranges of Google's original tokenizer; the
// extension-C bound as Hugging Face's Rust code has it).
bool IsChineseCharacter(utf8proc_int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool IsControl(utf8proc_category_t category) {
  return category == UTF8PROC_CATEGORY_CC || category == UTF8PROC_CATEGORY_CF ||
         category == UTF8PROC_CATEGORY_CO || category == UTF8PROC_CATEGORY_CS;
}

bool IsMark(utf8proc_category_t category) {
  return category == UTF8PROC_CATEGORY_MN || category == UTF8PROC_CATEGORY_MC ||
         category == UTF8PROC_CATEGORY_ME;
}

bool IsPunctuation(utf8proc_category_t category) {
  return category >= UTF8PROC_CATEGORY_PC && category <= UTF8PROC_CATEGORY_PO;
}

bool IsSymbol(utf8proc_category_t category) {
  return category >= UTF8PROC_CATEGORY_SM && category <= UTF8PROC_CATEGORY_SO;
}

// Splits normalized characters into words.
class WordBuilder {
 public:
  explicit WordBuilder(const BertNormalization& normalization) : normalization_(normalization) {}

  void Add(utf8proc_int32_t c) {
    if (IsWhitespace(c)) {
      EndWord();
      return;
    }
    const utf8proc_category_t category = utf8proc_category(c);
    if (c == 0 || c == 0xFFFD || IsControl(category)) return;
    if (normalization_.strip_accents && IsMark(category)) return;
    if (normalization_.lowercase) c = utf8proc_tolower(c);
    if (IsPunctuation(category) || (c < 0x7F && IsSymbol(category)) || IsChineseCharacter(c)) {
      EndWord();
      Append(c);
      EndWord();
      return;
    }
    Append(c);
  }

  std::vector<std::string> Finish() {
    EndWord();
    return std::move(words_);
  }

 private:
  void Append(utf8proc_int32_t c) {
    utf8proc_uint8_t bytes[4];
    const utf8proc_ssize_t n = utf8proc_encode_char(c, bytes);
    current_.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(n));
  }
  void EndWord() {
    if (!current_.empty()) words_.push_back(std::move(current_));
    current_.clear();
  }

  const BertNormalization& normalization_;
  std::vector<std::string> words_;
  std::string current_;
};

}  // namespace

std::vector<std::string> BertWords(std::string_view text, const BertNormalization& normalization) {
  WordBuilder words(normalization);
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t at = 0;
  const auto size = static_cast<utf8proc_ssize_t>(text.size());
  while (at < size) {
    utf8proc_int32_t c = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(bytes + at, size - at, &c);
    if (n <= 0) {  // invalid UTF-8 (callers reject it first): skip the byte, as U+FFFD is
      ++at;
      continue;
    }
    at += n;
    if (!normalization.strip_accents) {
      words.Add(c);
      continue;
    }
    // Canonical decompositions are at most 4 code points; a result that did not fit the 8
    // slots (utf8proc then returns the size it needs) keeps the character as it is.
    std::array<utf8proc_int32_t, 8> decomposed;
    int last_boundclass = 0;
    const utf8proc_ssize_t parts = utf8proc_decompose_char(
        c, decomposed.data(), decomposed.size(), static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE),
        &last_boundclass);
    if (parts <= 0 || parts > static_cast<utf8proc_ssize_t>(decomposed.size())) {
      words.Add(c);
      continue;
    }
    for (utf8proc_ssize_t i = 0; i < parts; ++i) words.Add(decomposed[i]);
  }
  return words.Finish();
}

}  // namespace textgen::model
