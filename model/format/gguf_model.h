#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "model/format/gguf_reader.h"
#include "model/format/model_loader.h"

namespace textgen::model {

// Builds config, weight views and vocabulary of a `llama` or `gpt2` GGUF model. Every tensor
// is checked against the config (errors name the tensor, expected and actual shape). The views
// point into file.bytes: the caller keeps that memory alive (LoadedModel::storage) and fills
// `path`. `fallback_name` is the config name when the file has no general.name.
absl::StatusOr<LoadedModel> BuildModelFromGguf(const GgufFile& file,
                                               std::string_view fallback_name);

}  // namespace textgen::model
