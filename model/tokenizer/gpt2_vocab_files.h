#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

// Reads OpenAI GPT-2 tokenizer files: `encoder.json` (object token -> id, ids dense from 0)
// and `vocab.bpe` (optional "#version" line, then one "left right" merge per line in rank
// order). kind kGpt2ByteBpe; when "<|endoftext|>" is present it is bos and eos and a control
// token; add_bos is false (GPT-2 prompts start without it). Validates the JSON shape, ids
// (range, duplicates, gaps) and merge lines, naming the offending entry. Thread-safe.
absl::StatusOr<TokenizerData> ReadGpt2VocabFiles(const std::string& encoder_json_path,
                                                 const std::string& vocab_bpe_path);

}  // namespace textgen::model
