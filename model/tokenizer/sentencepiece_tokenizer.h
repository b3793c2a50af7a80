#pragma once

#include <array>
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

// SentencePiece BPE as the `sentencepiece` library runs it for Llama-style models (GGUF
// "llama" vocabularies, llama2.c tokenizer.bin): identity normalisation, a dummy-prefix
// "▁" (unless the vocabulary says add_space_prefix = false, as Gemma's), spaces escaped to "▁",
// then pairs of adjacent pieces merged highest score first (leftmost on ties) as long as the merged
// piece is a normal or user-defined vocabulary entry; pieces left outside the vocabulary fall back
// to <0xXX> byte tokens (or <unk>). Immutable after Create(); thread-safe.
class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Validates `data` (sizes of scores/types, special ids in range).
  static absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> Create(TokenizerData data);

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
  explicit SentencePieceTokenizer(TokenizerData data);

  struct MergeScratch;  // per-Encode buffers reused across segments

  // Encodes `text` cut at the special tokens `splitter` finds; as llama.cpp does, the text
  // that starts the input or follows a special token gets the dummy-prefix space.
  std::vector<int> EncodeSplitting(std::string_view text, bool add_bos,
                                   const SpecialTokenSplitter& splitter,
                                   std::span<const TextRange> untrusted = {}) const;
  // Appends the ids of ordinary text (no special tokens), with the dummy prefix or not.
  void EncodeText(std::string_view text, bool dummy_prefix, std::vector<int>* ids) const;
  // Merges one segment of normalised text and appends its ids.
  void EncodeSegment(std::string_view norm, MergeScratch* scratch, std::vector<int>* ids) const;
  int TokenType(int id) const;
  // Id of a piece that merges may produce (normal / user-defined), or -1.
  int MergeablePieceId(std::string_view piece) const;
  // Appends the ids for one final piece: its own id, else its bytes' tokens, else <unk>.
  void AppendPieceIds(std::string_view piece, std::vector<int>* ids) const;

  TokenizerData data_;
  absl::flat_hash_map<std::string, int> mergeable_ids_;  // piece -> id
  std::array<int, 256> byte_ids_;                        // byte -> <0xXX> id, -1 when absent
  std::vector<std::string> surface_;                     // id -> decoded bytes ("▁" -> " ")
  bool segment_at_space_ = false;      // merges never cross a "▁" that follows a non-"▁"
  SpecialTokenSplitter user_defined_;  // tokens matched before BPE
  SpecialTokenSplitter user_defined_and_control_;  // ... when parsing special tokens
};

}  // namespace textgen::model
