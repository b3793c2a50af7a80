#include "model/tokenizer/tokenizer.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/tokenizer/gpt2_tokenizer.h"
#include "model/tokenizer/sentencepiece_tokenizer.h"
#include "model/tokenizer/wordpiece_tokenizer.h"

namespace textgen::model {

absl::Status ValidateVocabulary(const TokenizerData& data, const char* kind) {
  const size_t n = data.tokens.size();
  if (n == 0) return absl::InvalidArgumentError(absl::StrCat(kind, " vocabulary: no tokens"));
  if (n > (1u << 24)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kind, " vocabulary: ", n, " tokens exceeds the limit 16777216"));
  }
  if (!data.token_types.empty() && data.token_types.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(kind, " vocabulary: ", data.token_types.size(),
                                                   " token types for ", n, " tokens"));
  }
  for (int id : data.end_of_generation_ids) {
    if (id < 0 || id >= static_cast<int>(n)) {
      return absl::InvalidArgumentError(absl::StrCat(kind, " vocabulary: end-of-generation token ",
                                                     id, " is outside [0, ", n, ")"));
    }
  }
  for (const auto& [name, id] : {std::pair<const char*, int>{"bos_id", data.bos_id},
                                 {"eos_id", data.eos_id},
                                 {"unk_id", data.unk_id},
                                 {"pad_id", data.pad_id}}) {
    if (id < -1 || id >= static_cast<int>(n)) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind, " vocabulary: ", name, " ", id, " is outside [-1, ", n, ")"));
    }
  }
  return absl::OkStatus();
}

std::string Tokenizer::Decode(const std::vector<int>& ids, bool render_control) const {
  std::string text;
  int previous_id = -1;
  for (int id : ids) {
    text += render_control && IsControl(id) ? TokenText(id) : TokenBytes(id, previous_id);
    previous_id = id;
  }
  return text;
}

bool Tokenizer::IsEndOfGeneration(int id) const {
  const std::vector<int>& ids = end_of_generation_ids();
  return std::binary_search(ids.begin(), ids.end(), id);
}

absl::StatusOr<std::unique_ptr<Tokenizer>> CreateTokenizer(TokenizerData data) {
  if (data.end_of_generation_ids.empty() && data.eos_id >= 0) {
    data.end_of_generation_ids = {data.eos_id};
  }
  std::sort(data.end_of_generation_ids.begin(), data.end_of_generation_ids.end());
  data.end_of_generation_ids.erase(
      std::unique(data.end_of_generation_ids.begin(), data.end_of_generation_ids.end()),
      data.end_of_generation_ids.end());
  switch (data.kind) {
    case TokenizerData::Kind::kSentencePieceBpe: {
      auto tokenizer = SentencePieceTokenizer::Create(std::move(data));
      if (!tokenizer.ok()) return tokenizer.status();
      return std::unique_ptr<Tokenizer>(*std::move(tokenizer));
    }
    case TokenizerData::Kind::kGpt2ByteBpe: {
      auto tokenizer = Gpt2Tokenizer::Create(std::move(data));
      if (!tokenizer.ok()) return tokenizer.status();
      return std::unique_ptr<Tokenizer>(*std::move(tokenizer));
    }
    case TokenizerData::Kind::kWordPiece: {
      auto tokenizer = WordPieceTokenizer::Create(std::move(data));
      if (!tokenizer.ok()) return tokenizer.status();
      return std::unique_ptr<Tokenizer>(*std::move(tokenizer));
    }
  }
  return absl::InvalidArgumentError("unknown tokenizer kind");
}

}  // namespace textgen::model
