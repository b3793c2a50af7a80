#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace textgen::model {

// GPT-2's pre-tokenizer: splits text into the chunks BPE runs on, with the regex
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// compiled once with PCRE2 in UTF + UCP mode (JIT-compiled when the platform allows).
// Immutable after Create(); thread-safe (each Split call has its own match data).
class Gpt2PreTokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<Gpt2PreTokenizer>> Create();
  ~Gpt2PreTokenizer();
  Gpt2PreTokenizer(const Gpt2PreTokenizer&) = delete;
  Gpt2PreTokenizer& operator=(const Gpt2PreTokenizer&) = delete;

  // Chunks of `text` (views into it) in order; they cover `text` exactly. `text` must be
  // valid UTF-8.
  std::vector<std::string_view> Split(std::string_view text) const;

 private:
  struct Code;  // owns the pcre2_code
  explicit Gpt2PreTokenizer(std::unique_ptr<Code> code);
  std::unique_ptr<Code> code_;
};

}  // namespace textgen::model
