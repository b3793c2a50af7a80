#include "model/gguf_tokenizer.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/bpe_pre_tokenizer.h"
#include "model/loader_macros.h"

namespace textgen::model {
namespace {

// A special token id: absent, or -1 / 0xFFFFFFFF ("none", as llama.cpp's converter writes it)
// -> -1; otherwise it must be a valid id.
absl::StatusOr<int> SpecialId(const GgufFile& file, const std::string& key, int vocab_size) {
  if (file.FindKey(key) == nullptr) return -1;
  TEXTGEN_ASSIGN_OR_RETURN(const int64_t id, file.GetInt(key, -1, 0xFFFFFFFFll));
  if (id == -1 || id == 0xFFFFFFFFll) return -1;
  if (id >= vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("metadata key ", key, ": token id ", id, " is not in [0, ", vocab_size, ")"));
  }
  return static_cast<int>(id);
}

absl::Status CheckLength(const std::string& key, size_t got, int vocab_size) {
  if (got != static_cast<size_t>(vocab_size)) {
    return absl::InvalidArgumentError(absl::StrCat("metadata key ", key, ": has ", got,
                                                   " entries, expected ", vocab_size,
                                                   " (rows of token_embd.weight)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TokenizerData> ReadGgufTokenizer(const GgufFile& file, int vocab_size) {
  TokenizerData data;
  TEXTGEN_ASSIGN_OR_RETURN(const std::string model, file.GetString("tokenizer.ggml.model"));
  if (model == "llama") {
    data.kind = TokenizerData::Kind::kSentencePieceBpe;
    data.add_bos = true;
  } else if (model == "gpt2") {
    data.kind = TokenizerData::Kind::kGpt2ByteBpe;
    // Without the key, llama.cpp uses its "default" pre-tokenizer (and warns); so does textgen.
    data.pre_tokenizer = "default";
    if (file.FindKey("tokenizer.ggml.pre")) {
      TEXTGEN_ASSIGN_OR_RETURN(data.pre_tokenizer, file.GetString("tokenizer.ggml.pre"));
    }
    TEXTGEN_ASSIGN_OR_RETURN(const BpePreTokenizer::Traits traits,
                             BpePreTokenizer::TraitsOf(data.pre_tokenizer));
    data.add_bos = traits.add_bos;  // unless tokenizer.ggml.add_bos_token says otherwise
  } else {
    return absl::UnimplementedError(absl::StrCat("tokenizer.ggml.model \"", model,
                                                 "\" is not supported (supported: llama, gpt2)"));
  }

  TEXTGEN_ASSIGN_OR_RETURN(const auto* tokens,
                           file.GetArray("tokenizer.ggml.tokens", GgufType::kString));
  TEXTGEN_RETURN_IF_ERROR(CheckLength("tokenizer.ggml.tokens", tokens->size(), vocab_size));
  data.tokens.reserve(tokens->size());
  for (const GgufValue& v : *tokens) data.tokens.push_back(v.string());

  if (file.FindKey("tokenizer.ggml.scores")) {
    TEXTGEN_ASSIGN_OR_RETURN(const auto* scores,
                             file.GetArray("tokenizer.ggml.scores", GgufType::kFloat32));
    TEXTGEN_RETURN_IF_ERROR(CheckLength("tokenizer.ggml.scores", scores->size(), vocab_size));
    data.scores.reserve(scores->size());
    for (const GgufValue& v : *scores)
      data.scores.push_back(static_cast<float>(std::get<double>(v.data)));
  }
  if (file.FindKey("tokenizer.ggml.token_type")) {
    TEXTGEN_ASSIGN_OR_RETURN(const auto* types,
                             file.GetArray("tokenizer.ggml.token_type", GgufType::kInt32));
    TEXTGEN_RETURN_IF_ERROR(CheckLength("tokenizer.ggml.token_type", types->size(), vocab_size));
    data.token_types.reserve(types->size());
    for (const GgufValue& v : *types) {
      const int64_t t = std::get<int64_t>(v.data);
      if (t < TokenizerData::kNormal || t > TokenizerData::kByte) {
        return absl::InvalidArgumentError(absl::StrCat("tokenizer.ggml.token_type[",
                                                       data.token_types.size(), "] = ", t,
                                                       " is not a token type in [1, 6]"));
      }
      data.token_types.push_back(static_cast<int>(t));
    }
  }
  if (file.FindKey("tokenizer.ggml.merges")) {
    TEXTGEN_ASSIGN_OR_RETURN(const auto* merges,
                             file.GetArray("tokenizer.ggml.merges", GgufType::kString));
    data.merges.reserve(merges->size());
    for (const GgufValue& v : *merges) data.merges.push_back(v.string());
  }
  TEXTGEN_ASSIGN_OR_RETURN(data.bos_id, SpecialId(file, "tokenizer.ggml.bos_token_id", vocab_size));
  TEXTGEN_ASSIGN_OR_RETURN(data.eos_id, SpecialId(file, "tokenizer.ggml.eos_token_id", vocab_size));
  TEXTGEN_ASSIGN_OR_RETURN(data.unk_id,
                           SpecialId(file, "tokenizer.ggml.unknown_token_id", vocab_size));
  TEXTGEN_ASSIGN_OR_RETURN(data.pad_id,
                           SpecialId(file, "tokenizer.ggml.padding_token_id", vocab_size));
  if (file.FindKey("tokenizer.ggml.add_bos_token")) {
    TEXTGEN_ASSIGN_OR_RETURN(data.add_bos, file.GetBool("tokenizer.ggml.add_bos_token"));
  }
  return data;
}

}  // namespace textgen::model
