#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer_data.h"
#include "model/tokenizer/vocabulary_tokenizer.h"

namespace textgen::model {

// SentencePiece BPE as the `sentencepiece` library runs it for Llama-style models (GGUF
// "llama" vocabularies, llama2.c tokenizer.bin): identity normalisation, a dummy-prefix
// "▁" (unless the vocabulary says add_space_prefix = false, as Gemma's), spaces escaped to "▁",
// then pairs of adjacent pieces merged highest score first (leftmost on ties) as long as the merged
// piece is a normal or user-defined vocabulary entry; pieces left outside the vocabulary fall back
// to <0xXX> byte tokens (or <unk>). Immutable after Create(); thread-safe.
class SentencePieceTokenizer final : public VocabularyTokenizer {
 public:
  // Validates `data` (sizes of scores/types, special ids in range).
  static absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> Create(TokenizerData data);

  std::string TokenBytes(int id, int previous_id) const override;
  std::string TokenText(int id) const override;

 private:
  explicit SentencePieceTokenizer(TokenizerData data);

  struct MergeScratch;  // per-Encode buffers reused across segments

  // Appends the ids of ordinary text (no special tokens); as llama.cpp does, the text that
  // starts the input or follows a special token gets the dummy-prefix space.
  void EncodeText(std::string_view text, bool after_special, std::vector<int>* ids) const override;
  // Merges one segment of normalised text and appends its ids.
  void EncodeSegment(std::string_view norm, MergeScratch* scratch, std::vector<int>* ids) const;
  // Id of a piece that merges may produce (normal / user-defined), or -1.
  int MergeablePieceId(std::string_view piece) const;
  // Appends the ids for one final piece: its own id, else its bytes' tokens, else <unk>.
  void AppendPieceIds(std::string_view piece, std::vector<int>* ids) const;

  absl::flat_hash_map<std::string, int> mergeable_ids_;  // piece -> id
  std::array<int, 256> byte_ids_;                        // byte -> <0xXX> id, -1 when absent
  std::vector<std::string> surface_;                     // id -> decoded bytes ("▁" -> " ")
  bool segment_at_space_ = false;  // merges never cross a "▁" that follows a non-"▁"
};

}  // namespace textgen::model
