#include "model/tokenizer.h"

#include <utility>

#include "absl/status/status.h"
#include "model/gpt2_tokenizer.h"
#include "model/sentencepiece_tokenizer.h"

namespace textgen::model {

std::string Tokenizer::Decode(const std::vector<int>& ids) const {
  std::string text;
  int previous_id = -1;
  for (int id : ids) {
    text += TokenBytes(id, previous_id);
    previous_id = id;
  }
  return text;
}

absl::StatusOr<std::unique_ptr<Tokenizer>> CreateTokenizer(TokenizerData data) {
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
  }
  return absl::InvalidArgumentError("unknown tokenizer kind");
}

}  // namespace textgen::model
