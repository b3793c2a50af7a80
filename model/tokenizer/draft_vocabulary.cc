#include "model/tokenizer/draft_vocabulary.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace textgen::model {
namespace {

const char* KindName(TokenizerData::Kind kind) {
  switch (kind) {
    case TokenizerData::Kind::kSentencePieceBpe:
      return "SentencePiece";
    case TokenizerData::Kind::kGpt2ByteBpe:
      return "GPT-2 byte-level BPE";
    case TokenizerData::Kind::kWordPiece:
      return "WordPiece";
  }
  return "unknown";
}

int TypeOf(const TokenizerData& data, size_t id) {
  return id < data.token_types.size() ? data.token_types[id] : TokenizerData::kNormal;
}

absl::Status Differs(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("the draft model's vocabulary is not the target's: ", what,
                   " (a draft model must come from the same tokenizer)"));
}

}  // namespace

absl::Status CheckDraftVocabulary(const TokenizerData& target, const TokenizerData& draft) {
  if (target.kind != draft.kind) {
    return Differs(
        absl::StrCat("target tokenizer ", KindName(target.kind), ", draft ", KindName(draft.kind)));
  }
  if (target.bos_id != draft.bos_id || target.eos_id != draft.eos_id) {
    return Differs(absl::StrFormat("BOS/EOS ids %d/%d in the target, %d/%d in the draft",
                                   target.bos_id, target.eos_id, draft.bos_id, draft.eos_id));
  }
  const size_t n_target = target.tokens.size();
  const size_t n_draft = draft.tokens.size();
  if (std::max(n_target, n_draft) - std::min(n_target, n_draft) >
      static_cast<size_t>(kMaxDraftVocabularyPadding)) {
    return Differs(absl::StrFormat("%d tokens in the target, %d in the draft (at most %d apart)",
                                   n_target, n_draft, kMaxDraftVocabularyPadding));
  }
  for (size_t id = 0; id < std::min(n_target, n_draft); ++id) {
    if (target.tokens[id] != draft.tokens[id] || TypeOf(target, id) != TypeOf(draft, id)) {
      return Differs(
          absl::StrFormat("token %d is \"%s\" (type %d) in the target, \"%s\" (type %d) "
                          "in the draft",
                          id, absl::CHexEscape(target.tokens[id]), TypeOf(target, id),
                          absl::CHexEscape(draft.tokens[id]), TypeOf(draft, id)));
    }
  }
  return absl::OkStatus();
}

}  // namespace textgen::model
