#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace textgen::model {

// The pre-tokenizer of a byte-level BPE vocabulary, chosen by GGUF's `tokenizer.ggml.pre`:
// splits text into the chunks BPE runs on. A pre-tokenizer is a list of regexes applied in
// turn (the Hugging Face `Split` pre-tokenizers with "isolated" behaviour): each regex splits
// every chunk of the previous one into its matches and the text between them. Compiled with
// PCRE2 in UTF + UCP mode, so \p{L}, \p{N}, \s follow Unicode's categories.
// Immutable after Create(); thread-safe (each Split call has its own match data).
class BpePreTokenizer {
 public:
  // What a vocabulary's `tokenizer.ggml.pre` value implies besides the regexes.
  struct Traits {
    bool ignore_merges = false;  // a chunk that is a whole vocabulary token is not merged
    bool add_bos = false;        // BOS is added when the file does not say
  };

  // INVALID_ARGUMENT naming `name` and the supported names when it is not one of them.
  static absl::StatusOr<std::unique_ptr<BpePreTokenizer>> Create(std::string_view name);
  // The traits of pre-tokenizer `name`; INVALID_ARGUMENT as Create when it is unknown.
  static absl::StatusOr<Traits> TraitsOf(std::string_view name);
  // Every supported `tokenizer.ggml.pre` value, for messages and tests.
  static std::vector<std::string> SupportedNames();
  ~BpePreTokenizer();
  BpePreTokenizer(const BpePreTokenizer&) = delete;
  BpePreTokenizer& operator=(const BpePreTokenizer&) = delete;

  // Chunks of `text` (views into it) in order; they cover `text` exactly. `text` must be
  // valid UTF-8.
  std::vector<std::string_view> Split(std::string_view text) const;

  const Traits& traits() const { return traits_; }

 private:
  struct Code;  // owns a pcre2_code
  BpePreTokenizer(std::vector<std::unique_ptr<Code>> regexes, Traits traits);
  // Appends the pieces of `chunk` under regex `code`: matches and the gaps between them.
  void SplitOne(const Code& code, std::string_view chunk, std::vector<std::string_view>* out) const;

  std::vector<std::unique_ptr<Code>> regexes_;
  Traits traits_;
};

}  // namespace textgen::model
