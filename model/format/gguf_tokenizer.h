#pragma once

#include "absl/status/statusor.h"
#include "model/format/gguf_reader.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

// Reads the tokenizer.ggml.* vocabulary of a GGUF file. `vocab_size` is the model's embedding
// row count; the token list must have exactly that many entries.
absl::StatusOr<TokenizerData> ReadGgufTokenizer(const GgufFile& file, int vocab_size);

}  // namespace textgen::model
