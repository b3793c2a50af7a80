#pragma once

#include "absl/status/status.h"
#include "model/tokenizer/tokenizer_data.h"

namespace textgen::model {

// Most extra (padding) tokens one vocabulary may have past the other's end and still be the
// same vocabulary: converters pad the embedding rows to a multiple of 64 or 128.
inline constexpr int kMaxDraftVocabularyPadding = 128;

// Whether a draft model's vocabulary is the target's, so its token ids mean the same text:
// the same tokenizer kind, the same BOS and EOS ids, the same token text and type for every id
// both have, and sizes that differ by at most kMaxDraftVocabularyPadding. INVALID_ARGUMENT
// naming the first difference otherwise.
absl::Status CheckDraftVocabulary(const TokenizerData& target, const TokenizerData& draft);

}  // namespace textgen::model
