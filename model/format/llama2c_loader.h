#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "model/format/mapped_file.h"
#include "model/format/model_loader.h"

namespace textgen::model {

// The 7 x int32 header of a legacy (v0) llama2.c checkpoint.
struct Llama2cHeader {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;  // negative: an untied classifier wcls follows the weights
  int32_t seq_len = 0;
};
inline constexpr size_t kLlama2cHeaderBytes = 7 * sizeof(int32_t);

// Reads the header from the first 28 bytes (INVALID_ARGUMENT when shorter).
absl::StatusOr<Llama2cHeader> ReadLlama2cHeader(std::span<const uint8_t> bytes);

// True when the header's fields are all in plausible ranges: used to tell a llama2.c file from
// random bytes before committing to this format.
bool LooksLikeLlama2cHeader(const Llama2cHeader& header);

// Builds config and weight views of a llama2.c checkpoint held in `bytes` (views point into it;
// the caller keeps it alive). The file size must equal exactly what the header implies.
// The tokenizer is left empty.
absl::StatusOr<LoadedModel> BuildModelFromLlama2c(std::span<const uint8_t> bytes,
                                                  const std::string& name);

// Builds the model from the mapped checkpoint `file` (kept alive in LoadedModel::storage) plus
// its tokenizer: options.tokenizer_path, else tokenizer.bin or tok<vocab>.bin next to it.
absl::StatusOr<LoadedModel> LoadLlama2cModel(std::shared_ptr<const MappedFile> file,
                                             const LoadOptions& options);

}  // namespace textgen::model
