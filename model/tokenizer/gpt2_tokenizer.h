#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/special_token_splitter.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

class BpePreTokenizer;

// GPT-2-style byte-level BPE (GGUF "gpt2" vocabularies: GPT-2, Llama 3, Qwen, SmolLM, ...;
// OpenAI encoder.json + vocab.bpe): the text is split by the vocabulary's pre-tokenizer
// (data.pre_tokenizer), each chunk's bytes are mapped to GPT-2's printable "bytes_to_unicode"
// characters, and adjacent pieces are merged by merge rank (lowest first, leftmost on ties);
// with ignore_merges (Llama 3), a chunk that is itself a token is taken whole. User-defined
// tokens (MPT's whitespace runs, added tokens) are found whole first, as llama.cpp does.
// Immutable after Create(); thread-safe (per-call PCRE2 match data).
class Gpt2Tokenizer final : public Tokenizer {
 public:
  // Validates `data` (merges reference vocabulary entries, special ids in range) and compiles
  // the pre-tokenizer regex.
  static absl::StatusOr<std::unique_ptr<Gpt2Tokenizer>> Create(TokenizerData data);
  ~Gpt2Tokenizer() override;

  std::vector<int> Encode(std::string_view text, bool add_bos) const override;
  std::vector<int> EncodeWithSpecialTokens(std::string_view text, bool add_bos,
                                           std::span<const TextRange> untrusted) const override;
  bool IsControl(int id) const override {
    return id >= 0 && id < vocab_size() && TokenType(id) == TokenizerData::kControl;
  }
  std::string TokenBytes(int id, int previous_id) const override;
  int vocab_size() const override { return static_cast<int>(data_.tokens.size()); }
  int bos_id() const override { return data_.bos_id; }
  int eos_id() const override { return data_.eos_id; }
  const std::vector<int>& end_of_generation_ids() const override {
    return data_.end_of_generation_ids;
  }
  std::string TokenText(int id) const override;

 private:
  Gpt2Tokenizer(TokenizerData data, std::unique_ptr<BpePreTokenizer> pre_tokenizer);

  // Appends the BPE ids of one pre-tokenizer chunk (raw UTF-8 bytes).
  void EncodeChunk(std::string_view chunk, std::vector<int>* ids) const;
  int TokenType(int id) const;

  struct Merge {
    int rank;
    int result_id;
  };

  TokenizerData data_;
  std::unique_ptr<BpePreTokenizer> pre_tokenizer_;
  absl::flat_hash_map<std::string, int> whole_tokens_;  // ignore_merges: raw bytes -> id
  SpecialTokenSplitter user_defined_;                   // tokens matched before BPE
  SpecialTokenSplitter user_defined_and_control_;       // ... when parsing special tokens
  std::vector<int> EncodeSplitting(std::string_view text, bool add_bos,
                                   const SpecialTokenSplitter& splitter,
                                   std::span<const TextRange> untrusted = {}) const;
  // Encodes ordinary text (no special tokens in it).
  void EncodeText(std::string_view text, std::vector<int>* ids) const;
  std::vector<int> byte_ids_;                    // byte -> id of its single-char token
  absl::flat_hash_map<uint64_t, Merge> merges_;  // (left_id << 32 | right_id) -> merge
  std::vector<std::string> bytes_;               // id -> raw bytes the token stands for
};

}  // namespace textgen::model
