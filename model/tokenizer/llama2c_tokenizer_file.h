#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

// Reads a llama2.c `tokenizer.bin` (little-endian: int32 max_token_length, then per token
// float32 score, int32 len, len bytes) holding exactly `vocab_size` tokens.
//
// The llama2.c exporter turned SentencePiece's "▁" into spaces and stored ids 1/2 as
// "\n<s>\n" / "\n</s>\n"; the result is normalised to the GGUF convention: pieces use "▁",
// bos/eos are "<s>"/"</s>", token types are set (id 0 unknown, 1/2 control, "<0xXX>" byte,
// everything else normal), bos_id=1, eos_id=2, unk_id=0, kind kSentencePieceBpe.
//
// Every count, length and the file size are validated; a vocabulary size that does not use
// up the file exactly is an error. Thread-safe (no shared state).
absl::StatusOr<TokenizerData> ReadLlama2cTokenizer(const std::string& path, int vocab_size);
// The same from the file's bytes; `source` names it in errors (the fuzzer's entry point).
absl::StatusOr<TokenizerData> ParseLlama2cTokenizer(std::string_view contents, int vocab_size,
                                                    const std::string& source);

}  // namespace textgen::model
