#include "model/format/model_loader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/format/gguf_model.h"
#include "model/format/gguf_reader.h"
#include "model/format/llama2c_loader.h"
#include "model/format/mapped_file.h"

namespace textgen::model {
namespace {

// Prefixes a status message with the file it came from.
absl::Status InFile(const absl::Status& status, const std::string& path) {
  return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
}

// tokenizer.chat_template and its named variants tokenizer.chat_template.NAME.
absl::StatusOr<std::map<std::string, std::string>> ReadChatTemplates(const GgufFile& gguf) {
  constexpr absl::string_view kKey = "tokenizer.chat_template";
  std::map<std::string, std::string> templates;
  for (const GgufKv& kv : gguf.metadata) {
    const absl::string_view key = kv.key;
    if (!absl::StartsWith(key, kKey)) continue;
    std::string name;
    if (key.size() > kKey.size()) {
      if (key[kKey.size()] != '.') continue;  // e.g. tokenizer.chat_templates (a name list)
      name = std::string(key.substr(kKey.size() + 1));
    }
    if (kv.value.type != GgufType::kString) {
      return absl::InvalidArgumentError(absl::StrCat("metadata ", kv.key, " must be a string"));
    }
    templates[name] = kv.value.string();
  }
  return templates;
}

absl::StatusOr<LoadedModel> LoadGguf(std::shared_ptr<const MappedFile> file,
                                     const std::string& path) {
  auto gguf = ParseGguf(file->bytes());
  if (!gguf.ok()) return InFile(gguf.status(), path);
  auto model = BuildModelFromGguf(*gguf, std::filesystem::path(path).stem().string());
  if (!model.ok()) return InFile(model.status(), path);
  auto templates = ReadChatTemplates(*gguf);
  if (!templates.ok()) return InFile(templates.status(), path);
  model->chat_templates = *std::move(templates);
  model->path = path;
  model->storage = std::move(file);
  return model;
}

}  // namespace

absl::StatusOr<LoadedModel> LoadModel(const std::string& path, const LoadOptions& options) {
  TEXTGEN_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::Open(path));
  const std::span<const uint8_t> bytes = file->bytes();
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) {
    return LoadGguf(std::move(file), path);
  }
  // llama2.c's versioned exports (export.py --version 1/2) start with "ak42".
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), "24ka", 4) == 0) {
    int32_t version;
    std::memcpy(&version, bytes.data() + 4, 4);
    return absl::UnimplementedError(
        absl::StrCat(path, ": llama2.c export format version ", version,
                     " is not supported; export the legacy (v0) format"));
  }
  auto header = ReadLlama2cHeader(bytes);
  if (header.ok() && LooksLikeLlama2cHeader(*header)) {
    return LoadLlama2cModel(std::move(file), options);
  }
  const absl::string_view head(reinterpret_cast<const char*>(bytes.data()),
                               std::min<size_t>(bytes.size(), 8));
  return absl::InvalidArgumentError(absl::StrCat(
      path,
      ": neither a GGUF file (magic \"GGUF\") nor a llama2.c checkpoint (plausible 7 x int32 "
      "header); first bytes: \"",
      absl::CHexEscape(head), "\""));
}

}  // namespace textgen::model
