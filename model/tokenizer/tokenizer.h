#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tokenizer/text_range.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

// Text <-> token ids. Immutable after creation; thread-safe for concurrent use.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes UTF-8 text (invalid UTF-8 is rejected by callers beforehand). Prepends BOS when
  // add_bos is true and the vocabulary has one. User-defined tokens written in the text are
  // taken whole (as llama.cpp does); control tokens ("<|im_start|>") are not: their text is
  // encoded like any other, so user text cannot inject them.
  virtual std::vector<int> Encode(std::string_view text, bool add_bos) const = 0;

  // As Encode, but control tokens written in the text become those tokens (chat templates'
  // rendered prompts; llama.cpp's parse_special), except where they overlap an `untrusted`
  // range (sorted, disjoint): text a user wrote stays text inside a rendered chat prompt.
  virtual std::vector<int> EncodeWithSpecialTokens(std::string_view text, bool add_bos,
                                                   std::span<const TextRange> untrusted) const = 0;

  // The raw bytes token `id` stands for when it follows `previous_id` (SentencePiece drops
  // the leading space of the first piece after BOS). Control tokens decode to "", but those
  // of TokenizerData::printed_control_ids.
  virtual std::string TokenBytes(int id, int previous_id) const = 0;

  // Decodes a whole id sequence to text (bytes joined; may hold invalid UTF-8 only if the
  // ids themselves split a character). Control tokens decode to "" unless render_control,
  // which writes their text ("<|im_end|>").
  std::string Decode(const std::vector<int>& ids, bool render_control = false) const;
  virtual bool IsControl(int id) const = 0;

  virtual int vocab_size() const = 0;
  virtual int bos_id() const = 0;  // -1 when absent
  virtual int eos_id() const = 0;  // -1 when absent
  // Every token that ends a generation (EOS, end-of-turn, ...), ascending; may be empty.
  virtual const std::vector<int>& end_of_generation_ids() const = 0;
  bool IsEndOfGeneration(int id) const;
  // Printable token text, for logs, GetModelInfo and logprobs.
  virtual std::string TokenText(int id) const = 0;
};

// Builds the tokenizer the data describes.
absl::StatusOr<std::unique_ptr<Tokenizer>> CreateTokenizer(TokenizerData data);

// Turns a token stream into text deltas that are always whole UTF-8 characters: bytes of an
// incomplete character are held back until the character completes. One per sequence.
class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer* tokenizer, int previous_id = -1);
  // Returns the text that became complete by adding `id` (possibly empty).
  std::string Push(int id);
  // Returns held-back bytes at end of stream (invalid sequences become U+FFFD).
  std::string Flush();

 private:
  const Tokenizer* tokenizer_;
  int previous_id_;
  std::string pending_;
};

}  // namespace textgen::model
