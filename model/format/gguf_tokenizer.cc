#include "model/format/gguf_tokenizer.h"

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/format/mapped_file.h"
#include "model/tokenizer/bpe_pre_tokenizer.h"

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

// Token texts that end a turn or a message in the vocabularies of the model families textgen
// serves; llama.cpp recognizes the same texts (its converters do not record them all).
constexpr const char* kEndOfGenerationTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",  // gpt-oss (harmony): the final answer is done
    "<|call|>",    // gpt-oss (harmony): a tool call is done
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "[EOT]",
    "<\uFF5Cend\u2581of\u2581sentence\uFF5C>",  // DeepSeek
};
// Fill-in-the-middle prefix / suffix / middle markers: control tokens whatever the file says
// (llama.cpp overrides their type too), so user text cannot produce them.
constexpr const char* kFimMarkerTexts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",    "<\uFF5Cfim\u2581begin\uFF5C>",
    "<PRE>",          "\u2581<PRE>",  "<|code_prefix|>", "<|prefix|>",
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",    "<\uFF5Cfim\u2581hole\uFF5C>",
    "<SUF>",          "\u2581<SUF>",  "<|code_suffix|>", "<|suffix|>",
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>",    "<\uFF5Cfim\u2581end\uFF5C>",
    "<MID>",          "\u2581<MID>",  "<|code_middle|>", "<|middle|>",
};
// Fill-in-the-middle padding, repository and file separators also end a generation; found by
// their GGUF key, else by their text (the first listed text present wins).
constexpr const char* kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr const char* kFimRepoTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                         "<reponame>"};
constexpr const char* kFimSepTexts[] = {"<|file_sep|>"};

template <size_t N>
int FindByText(const TokenizerData& data, const char* const (&texts)[N]) {
  for (const char* text : texts) {
    for (size_t id = 0; id < data.tokens.size(); ++id) {
      if (data.tokens[id] == text) return static_cast<int>(id);
    }
  }
  return -1;
}

// gpt-oss's harmony format (o200k_harmony: a vocabulary with <|return|> and <|call|>): a reply
// is a series of messages, <|start|>assistant<|channel|>analysis<|message|>...<|end|>, so <|end|>
// ends a message, not the generation, and the structure tokens are printed for the chat output
// parser to split channels and tool calls, as llama.cpp does. llama.cpp makes them user-defined
// for that, which lets user text produce them (a user message could forge an assistant turn);
// here they stay control tokens that are printed.
void MarkHarmonyTokens(TokenizerData& data) {
  const auto id_of = [&data](std::string_view text) {
    for (size_t id = 0; id < data.tokens.size(); ++id) {
      if (data.tokens[id] == text) return static_cast<int>(id);
    }
    return -1;
  };
  if (id_of("<|return|>") < 0 || id_of("<|call|>") < 0) return;
  const auto print = [&data](int id) {
    if (id < 0) return;
    if (!data.token_types.empty()) data.token_types[id] = TokenizerData::kControl;
    data.printed_control_ids.push_back(id);
  };
  const int end = id_of("<|end|>");
  if (end >= 0) {
    std::erase(data.end_of_generation_ids, end);
    print(end);
  }
  for (const char* text : {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"}) {
    print(id_of(text));
  }
  std::sort(data.printed_control_ids.begin(), data.printed_control_ids.end());
}

// EOS, end-of-turn, end-of-message and FIM-separator ids (from their keys or texts), and every
// token whose text is a known end-of-turn marker; those found by text, and the FIM markers,
// become control tokens (never printed, never matched in user text), as llama.cpp does.
absl::Status DeriveEndOfGeneration(const GgufFile& file, TokenizerData& data) {
  const int vocab_size = static_cast<int>(data.tokens.size());
  std::vector<int>& ids = data.end_of_generation_ids;
  if (data.eos_id >= 0) ids.push_back(data.eos_id);
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    TEXTGEN_ASSIGN_OR_RETURN(const int id, SpecialId(file, key, vocab_size));
    if (id >= 0) ids.push_back(id);
  }
  const std::pair<const char*, int> fim[] = {
      {"tokenizer.ggml.fim_pad_token_id", FindByText(data, kFimPadTexts)},
      {"tokenizer.ggml.fim_rep_token_id", FindByText(data, kFimRepoTexts)},
      {"tokenizer.ggml.fim_sep_token_id", FindByText(data, kFimSepTexts)}};
  auto make_control = [&data](int id) {
    if (!data.token_types.empty()) data.token_types[id] = TokenizerData::kControl;
  };
  for (const auto& [key, by_text] : fim) {
    TEXTGEN_ASSIGN_OR_RETURN(const int id, SpecialId(file, key, vocab_size));
    if (id >= 0) {
      ids.push_back(id);
    } else if (by_text >= 0) {
      ids.push_back(by_text);
      make_control(by_text);
    }
  }
  for (size_t id = 0; id < data.tokens.size(); ++id) {
    for (const char* text : kFimMarkerTexts) {
      if (data.tokens[id] == text) make_control(static_cast<int>(id));
    }
  }
  for (size_t id = 0; id < data.tokens.size(); ++id) {
    for (const char* text : kEndOfGenerationTexts) {
      if (data.tokens[id] != text) continue;
      ids.push_back(static_cast<int>(id));
      make_control(static_cast<int>(id));
    }
  }
  MarkHarmonyTokens(data);
  return absl::OkStatus();
}

// Phi-3's special tokens eat the whitespace after them; llama.cpp recognizes Phi-3 by its
// general.name ("Phi-3-mini-4k-instruct"), so textgen does too.
absl::Status MarkStrippingTokens(const GgufFile& file, TokenizerData& data) {
  if (!file.FindKey("general.name")) return absl::OkStatus();
  TEXTGEN_ASSIGN_OR_RETURN(const std::string name, file.GetString("general.name"));
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower.find("phi-3") == std::string::npos && lower.find("phi3") == std::string::npos) {
    return absl::OkStatus();
  }
  for (size_t id = 0; id < data.tokens.size(); ++id) {
    const int type = data.token_types.empty() ? TokenizerData::kNormal : data.token_types[id];
    const std::string& text = data.tokens[id];
    const bool special = type == TokenizerData::kControl || type == TokenizerData::kUserDefined ||
                         type == TokenizerData::kUnknown || text == "</s>";
    if (special && text != "<unk>" && text != "<s>" && text != "<|endoftext|>") {
      data.rstrip_ids.push_back(static_cast<int>(id));
    }
  }
  return absl::OkStatus();
}

// BERT's special ids default to its vocabulary's ([CLS] 101, [UNK] 100, [SEP] 102), as
// llama.cpp's do, when the file leaves them out; its normalizer lowercases and strips accents
// unless tokenizer.ggml.normalizer.* says otherwise.
absl::Status ReadWordPieceKeys(const GgufFile& file, TokenizerData& data) {
  const int vocab_size = static_cast<int>(data.tokens.size());
  auto default_id = [vocab_size](int id) { return id < vocab_size ? id : -1; };
  if (data.bos_id < 0 && !file.FindKey("tokenizer.ggml.bos_token_id"))
    data.bos_id = default_id(101);
  if (data.unk_id < 0 && !file.FindKey("tokenizer.ggml.unknown_token_id")) {
    data.unk_id = default_id(100);
  }
  data.sep_id = default_id(102);
  TEXTGEN_ASSIGN_OR_RETURN(const int sep,
                           SpecialId(file, "tokenizer.ggml.seperator_token_id", vocab_size));
  if (file.FindKey("tokenizer.ggml.seperator_token_id")) data.sep_id = sep;
  for (const auto& [key, flag] :
       {std::pair<const char*, bool*>{"tokenizer.ggml.add_sep_token", &data.add_sep},
        {"tokenizer.ggml.normalizer.lowercase", &data.lowercase}}) {
    if (file.FindKey(key)) {
      TEXTGEN_ASSIGN_OR_RETURN(*flag, file.GetBool(key));
    }
  }
  data.strip_accents = data.lowercase;  // Hugging Face's default follows lowercasing
  if (file.FindKey("tokenizer.ggml.normalizer.strip_accents")) {
    TEXTGEN_ASSIGN_OR_RETURN(data.strip_accents,
                             file.GetBool("tokenizer.ggml.normalizer.strip_accents"));
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
  } else if (model == "bert") {
    data.kind = TokenizerData::Kind::kWordPiece;
    data.add_bos = true;  // [CLS] before and [SEP] after, unless the file says otherwise
    data.add_sep = true;
  } else {
    return absl::UnimplementedError(absl::StrCat(
        "tokenizer.ggml.model \"", model, "\" is not supported (supported: llama, gpt2, bert)"));
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
  if (data.kind == TokenizerData::Kind::kWordPiece) {
    TEXTGEN_RETURN_IF_ERROR(ReadWordPieceKeys(file, data));
  }
  TEXTGEN_RETURN_IF_ERROR(DeriveEndOfGeneration(file, data));
  TEXTGEN_RETURN_IF_ERROR(MarkStrippingTokens(file, data));
  if (file.FindKey("tokenizer.ggml.add_space_prefix")) {
    TEXTGEN_ASSIGN_OR_RETURN(data.add_space_prefix,
                             file.GetBool("tokenizer.ggml.add_space_prefix"));
  }
  if (file.FindKey("tokenizer.ggml.add_bos_token")) {
    TEXTGEN_ASSIGN_OR_RETURN(data.add_bos, file.GetBool("tokenizer.ggml.add_bos_token"));
  }
  if (file.FindKey("tokenizer.ggml.add_eos_token")) {
    TEXTGEN_ASSIGN_OR_RETURN(data.add_eos, file.GetBool("tokenizer.ggml.add_eos_token"));
  }
  return data;
}

absl::StatusOr<TokenizerData> ReadGgufVocabularyFile(const std::string& path) {
  TEXTGEN_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  TEXTGEN_ASSIGN_OR_RETURN(GgufFile file, ParseGguf(mapped->bytes()));
  TEXTGEN_ASSIGN_OR_RETURN(const auto* tokens,
                           file.GetArray("tokenizer.ggml.tokens", GgufType::kString));
  return ReadGgufTokenizer(file, static_cast<int>(tokens->size()));
}

}  // namespace textgen::model
