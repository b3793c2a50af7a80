#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/utf8.h"

namespace textgen::model {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer* tokenizer, int previous_id)
    : tokenizer_(tokenizer), previous_id_(previous_id) {}

std::string IncrementalDetokenizer::Push(int id) {
  pending_ += tokenizer_->TokenBytes(id, previous_id_);
  previous_id_ = id;
  std::string complete;
  // Emit whole characters (and U+FFFD for bytes that can never complete); keep the rest.
  const size_t held = AppendCompleteUtf8(pending_, &complete);
  pending_.erase(0, pending_.size() - held);
  return complete;
}

std::string IncrementalDetokenizer::Flush() {
  std::string rest = SanitizeUtf8(pending_);
  pending_.clear();
  return rest;
}

}  // namespace textgen::model
