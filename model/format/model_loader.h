#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/arch/model_config.h"
#include "model/format/weights.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

class MappedFile;

// A model read from disk: configuration, weight views and vocabulary. The weight views
// point into `storage` (mmapped file and/or dequantized buffers), which lives as long as
// this object. Immutable after loading.
struct LoadedModel {
  ModelConfig config;
  ModelWeights weights;
  TokenizerData tokenizer;
  DType file_dtype = DType::kF32;  // dominant weight type in the file, for GetModelInfo
  std::string path;
  // Jinja chat templates from the file: "" = tokenizer.chat_template (the default), NAME =
  // tokenizer.chat_template.NAME (e.g. "tool_use"). Empty for llama2.c checkpoints.
  std::map<std::string, std::string> chat_templates;
  std::shared_ptr<const WeightStorage> storage;  // keeps mmap + owned buffers alive
};

struct LoadOptions {
  // llama2.c checkpoints carry no vocabulary: path of the tokenizer.bin that goes with it.
  // Empty: look for tokenizer.bin / tok<vocab>.bin next to the checkpoint.
  std::string tokenizer_path;
};

// Loads a GGUF (v2/v3) file or a llama2.c checkpoint, chosen by the file's magic bytes.
// Every header field, count, offset and size is validated; errors say what and where.
absl::StatusOr<LoadedModel> LoadModel(const std::string& path, const LoadOptions& options = {});

}  // namespace textgen::model
