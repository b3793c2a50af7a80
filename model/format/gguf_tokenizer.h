#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "model/format/gguf_reader.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

// Reads the tokenizer.ggml.* vocabulary of a GGUF file. `vocab_size` is the model's embedding
// row count; the token list must have exactly that many entries.
absl::StatusOr<TokenizerData> ReadGgufTokenizer(const GgufFile& file, int vocab_size);

// The vocabulary of the GGUF file at `path`, sized by its own token list: for vocabulary-only
// files (llama.cpp's models/ggml-vocab-*.gguf) and for reading a model's tokenizer alone.
absl::StatusOr<TokenizerData> ReadGgufVocabularyFile(const std::string& path);

}  // namespace textgen::model
