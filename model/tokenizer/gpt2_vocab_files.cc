#include "model/tokenizer/gpt2_vocab_files.h"

#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace textgen::model {
namespace {

constexpr int kMaxVocabSize = 1 << 22;
constexpr char kEndOfText[] = "<|endoftext|>";

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  std::string contents((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return contents;
}

absl::Status ParseEncoderJson(const std::string& path, const std::string& text,
                              TokenizerData* data) {
  // No exceptions: parse errors come back as a discarded value.
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpt2 encoder.json ", path, ": not valid JSON (", text.size(), " bytes)"));
  }
  if (!json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpt2 encoder.json ", path, ": expected an object token -> id, got ", json.type_name()));
  }
  const size_t n = json.size();
  if (n == 0 || n > kMaxVocabSize) {
    return absl::InvalidArgumentError(absl::StrCat("gpt2 encoder.json ", path, ": ", n,
                                                   " tokens, expected [1, ", kMaxVocabSize, "]"));
  }
  data->tokens.assign(n, std::string());
  std::vector<bool> seen(n, false);
  for (const auto& [token, value] : json.items()) {
    if (!value.is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat("gpt2 encoder.json ", path, ": token \"",
                                                     token, "\" has a non-integer id ",
                                                     value.dump()));
    }
    const int64_t id = value.get<int64_t>();
    if (id < 0 || id >= static_cast<int64_t>(n)) {
      return absl::InvalidArgumentError(absl::StrCat("gpt2 encoder.json ", path, ": token \"",
                                                     token, "\" id ", id, " is outside [0, ", n,
                                                     ")"));
    }
    if (seen[id]) {
      return absl::InvalidArgumentError(absl::StrCat("gpt2 encoder.json ", path, ": id ", id,
                                                     " is used twice (again by \"", token, "\")"));
    }
    seen[id] = true;
    data->tokens[id] = token;
  }
  return absl::OkStatus();  // n distinct ids in [0, n): no gaps possible
}

absl::Status ParseMerges(const std::string& path, const std::string& text, TokenizerData* data) {
  std::istringstream lines(text);
  std::string line;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_number == 1 && line.rfind("#version", 0) == 0) continue;
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("gpt2 vocab.bpe ", path, ": line ",
                                                     line_number, " \"", line.substr(0, 80),
                                                     "\" is not \"left right\""));
    }
    data->merges.push_back(std::move(line));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TokenizerData> ReadGpt2VocabFiles(const std::string& encoder_json_path,
                                                 const std::string& vocab_bpe_path) {
  TokenizerData data;
  data.kind = TokenizerData::Kind::kGpt2ByteBpe;
  data.add_bos = false;

  auto encoder_text = ReadWholeFile(encoder_json_path);
  if (!encoder_text.ok()) return encoder_text.status();
  if (auto status = ParseEncoderJson(encoder_json_path, *encoder_text, &data); !status.ok()) {
    return status;
  }
  auto merges_text = ReadWholeFile(vocab_bpe_path);
  if (!merges_text.ok()) return merges_text.status();
  if (auto status = ParseMerges(vocab_bpe_path, *merges_text, &data); !status.ok()) {
    return status;
  }

  data.token_types.assign(data.tokens.size(), TokenizerData::kNormal);
  for (size_t id = 0; id < data.tokens.size(); ++id) {
    if (data.tokens[id] == kEndOfText) {
      data.bos_id = data.eos_id = static_cast<int>(id);
      data.token_types[id] = TokenizerData::kControl;
    }
  }
  return data;
}

}  // namespace textgen::model
