#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer_data.h"
#include "model/tokenizer/vocabulary_tokenizer.h"

namespace textgen::model {

class BpePreTokenizer;

// GPT-2-style byte-level BPE (GGUF "gpt2" vocabularies: GPT-2, Llama 3, Qwen, SmolLM, ...;
// OpenAI encoder.json + vocab.bpe): the text is split by the vocabulary's pre-tokenizer
// (data.pre_tokenizer), each chunk's bytes are mapped to GPT-2's printable "bytes_to_unicode"
// characters, and adjacent pieces are merged by merge rank (lowest first, leftmost on ties);
// with ignore_merges (Llama 3), a chunk that is itself a token is taken whole. User-defined
// tokens (MPT's whitespace runs, added tokens) are found whole first, as llama.cpp does.
// Immutable after Create(); thread-safe (per-call PCRE2 match data).
class Gpt2Tokenizer final : public VocabularyTokenizer {
 public:
  // Validates `data` (merges reference vocabulary entries, special ids in range) and compiles
  // the pre-tokenizer regex.
  static absl::StatusOr<std::unique_ptr<Gpt2Tokenizer>> Create(TokenizerData data);
  ~Gpt2Tokenizer() override;

  std::string TokenBytes(int id, int previous_id) const override;
  std::string TokenText(int id) const override;

 private:
  Gpt2Tokenizer(TokenizerData data, std::unique_ptr<BpePreTokenizer> pre_tokenizer);

  // Appends the BPE ids of one pre-tokenizer chunk (raw UTF-8 bytes).
  void EncodeChunk(std::string_view chunk, std::vector<int>* ids) const;
  // Pre-tokenizes ordinary text and appends each chunk's BPE ids.
  void EncodeText(std::string_view text, bool after_special, std::vector<int>* ids) const override;

  struct Merge {
    int rank;
    int result_id;
  };

  std::unique_ptr<BpePreTokenizer> pre_tokenizer_;
  absl::flat_hash_map<std::string, int> whole_tokens_;  // ignore_merges: raw bytes -> id
  std::vector<int> byte_ids_;                           // byte -> id of its single-char token
  absl::flat_hash_map<uint64_t, Merge> merges_;         // (left_id << 32 | right_id) -> merge
  std::vector<std::string> bytes_;                      // id -> raw bytes the token stands for
};

}  // namespace textgen::model
