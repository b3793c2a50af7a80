#include "model/tokenizer/llama2c_tokenizer_file.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "model/base/status_macros.h"

namespace textgen::model {
namespace {

// Far above any real vocabulary (Llama 3 has 128k tokens); guards against absurd values.
constexpr int kMaxVocabSize = 1 << 22;
// Longest piece we accept; llama2.c's own tokenizers use 27 (Llama 2) and 7 (tok512).
constexpr int32_t kMaxTokenLength = 1 << 16;

// Sequential little-endian reader over an in-memory file that reports where it ran out.
class ByteCursor {
 public:
  explicit ByteCursor(std::string_view data) : data_(data) {}

  size_t offset() const { return offset_; }
  size_t remaining() const { return data_.size() - offset_; }

  bool ReadInt32(int32_t* out) { return ReadRaw(out, sizeof(*out)); }
  bool ReadFloat(float* out) { return ReadRaw(out, sizeof(*out)); }
  bool ReadBytes(size_t n, std::string* out) {
    if (remaining() < n) return false;
    out->assign(data_.data() + offset_, n);
    offset_ += n;
    return true;
  }

 private:
  bool ReadRaw(void* out, size_t n) {
    if (remaining() < n) return false;
    std::memcpy(out, data_.data() + offset_, n);  // file is little-endian, like the host
    offset_ += n;
    return true;
  }

  std::string_view data_;
  size_t offset_ = 0;
};

bool IsByteTokenPiece(std::string_view piece) {
  auto is_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return piece.size() == 6 && piece.substr(0, 3) == "<0x" && is_hex(piece[3]) && is_hex(piece[4]) &&
         piece[5] == '>';
}

absl::Status CheckVocabSize(const std::string& source, int vocab_size) {
  // Ids 0/1/2 are <unk>, <s>, </s> in every llama2.c vocabulary.
  if (vocab_size < 3 || vocab_size > kMaxVocabSize) {
    return absl::InvalidArgumentError(absl::StrCat("llama2.c tokenizer ", source, ": vocab_size ",
                                                   vocab_size, " must be in [3, ", kMaxVocabSize,
                                                   "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TokenizerData> ReadLlama2cTokenizer(const std::string& path, int vocab_size) {
  TEXTGEN_RETURN_IF_ERROR(CheckVocabSize(path, vocab_size));
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("llama2.c tokenizer ", path, ": cannot open file"));
  }
  const std::string contents((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  if (file.bad()) {
    return absl::DataLossError(absl::StrCat("llama2.c tokenizer ", path, ": read error"));
  }
  return ParseLlama2cTokenizer(contents, vocab_size, path);
}

absl::StatusOr<TokenizerData> ParseLlama2cTokenizer(std::string_view contents, int vocab_size,
                                                    const std::string& source) {
  TEXTGEN_RETURN_IF_ERROR(CheckVocabSize(source, vocab_size));
  const std::string where =
      absl::StrCat("llama2.c tokenizer ", source, " (", contents.size(), " bytes)");
  ByteCursor cursor(contents);

  int32_t max_token_length = 0;
  if (!cursor.ReadInt32(&max_token_length)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": too short for the 4-byte max_token_length header"));
  }
  if (max_token_length <= 0 || max_token_length > kMaxTokenLength) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": max_token_length ", max_token_length,
                                                   " must be in [1, ", kMaxTokenLength, "]"));
  }

  TokenizerData data;
  data.kind = TokenizerData::Kind::kSentencePieceBpe;
  data.tokens.reserve(vocab_size);
  data.scores.reserve(vocab_size);
  data.token_types.reserve(vocab_size);
  for (int id = 0; id < vocab_size; ++id) {
    const size_t entry_offset = cursor.offset();
    float score = 0;
    int32_t len = 0;
    if (!cursor.ReadFloat(&score) || !cursor.ReadInt32(&len)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": token ", id, " header at offset ", entry_offset,
                       " runs past the end of the file (expected ", vocab_size, " tokens)"));
    }
    if (!std::isfinite(score)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": token ", id, " has a non-finite score ", score));
    }
    if (len < 0 || len > max_token_length) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": token ", id, " length ", len,
                       " must be in [0, max_token_length=", max_token_length, "]"));
    }
    std::string piece;
    if (!cursor.ReadBytes(static_cast<size_t>(len), &piece)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": token ", id, " bytes [",
                                                     cursor.offset(), ", ", cursor.offset() + len,
                                                     ") run past the end of the file"));
    }
    // Undo the exporter's quirks so pieces look like GGUF / SentencePiece ones.
    int type = TokenizerData::kNormal;
    if (id == 0) {
      type = TokenizerData::kUnknown;
    } else if (id == 1 || id == 2) {
      type = TokenizerData::kControl;
      if (piece == "\n<s>\n") piece = "<s>";
      if (piece == "\n</s>\n") piece = "</s>";
    } else if (IsByteTokenPiece(piece)) {
      type = TokenizerData::kByte;
    } else {
      piece = absl::StrReplaceAll(piece, {{" ", "\xE2\x96\x81"}});  // " " -> "▁"
    }
    data.tokens.push_back(std::move(piece));
    data.scores.push_back(score);
    data.token_types.push_back(type);
  }
  if (cursor.remaining() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", cursor.remaining(), " bytes left after ", vocab_size,
                     " tokens; the file holds a different vocabulary size"));
  }
  data.unk_id = 0;
  data.bos_id = 1;
  data.eos_id = 2;
  data.add_bos = true;
  return data;
}

}  // namespace textgen::model
