#include "model/tokenizer/gpt2_tokenizer.h"

#include <queue>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/base/status_macros.h"
#include "model/tokenizer/bpe_pre_tokenizer.h"
#include "model/tokenizer/gpt2_byte_mapping.h"
#include "model/tokenizer/utf8.h"

namespace textgen::model {
namespace {

// Longer chunks are rare and seldom repeat; not worth remembering.
constexpr size_t kMaxCachedChunkBytes = 64;

uint64_t PairKey(int left, int right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// A candidate merge of symbol `left` with its right neighbour `right`.
struct Candidate {
  int rank;
  int left;
  int right;
  int left_id;  // ids at push time; a mismatch later means the candidate is stale
  int right_id;
};

// Lowest rank first; on ties the leftmost pair.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Gpt2Tokenizer>> Gpt2Tokenizer::Create(TokenizerData data) {
  TEXTGEN_RETURN_IF_ERROR(ValidateVocabulary(data, "gpt2"));
  const size_t n = data.tokens.size();
  auto pre_tokenizer = BpePreTokenizer::Create(data.pre_tokenizer);
  if (!pre_tokenizer.ok()) return pre_tokenizer.status();
  auto tokenizer =
      std::unique_ptr<Gpt2Tokenizer>(new Gpt2Tokenizer(std::move(data), *std::move(pre_tokenizer)));

  // Vocabulary lookups, merges and per-token bytes.
  absl::flat_hash_map<std::string, int> ids;
  ids.reserve(n);
  for (size_t id = 0; id < n; ++id) ids.emplace(tokenizer->data_.tokens[id], id);
  const auto& byte_chars = Gpt2ByteToUnicode();
  tokenizer->byte_ids_.assign(256, -1);
  for (int byte = 0; byte < 256; ++byte) {
    auto it = ids.find(byte_chars[byte]);
    if (it != ids.end()) tokenizer->byte_ids_[byte] = it->second;
  }
  const std::vector<std::string>& merges = tokenizer->data_.merges;
  tokenizer->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& merge = merges[rank];
    const size_t space = merge.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == merge.size() ||
        merge.find(' ', space + 1) != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("gpt2 merge ", rank, " \"", merge,
                                                     "\": expected \"left right\" with one space"));
    }
    const std::string left = merge.substr(0, space);
    const std::string right = merge.substr(space + 1);
    auto left_it = ids.find(left);
    auto right_it = ids.find(right);
    auto result_it = ids.find(left + right);
    if (left_it == ids.end() || right_it == ids.end() || result_it == ids.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpt2 merge ", rank, " \"", merge, "\": \"",
                       left_it == ids.end() ? left : (right_it == ids.end() ? right : left + right),
                       "\" is not in the vocabulary"));
    }
    tokenizer->merges_.try_emplace(PairKey(left_it->second, right_it->second),
                                   Merge{static_cast<int>(rank), result_it->second});
  }
  tokenizer->bytes_.resize(n);
  for (size_t id = 0; id < n; ++id) {
    const std::string& token = tokenizer->data_.tokens[id];
    // Added (user-defined, control) tokens stand for their own text, as do tokens that are not
    // in byte-level form.
    const int type = tokenizer->TokenType(static_cast<int>(id));
    tokenizer->bytes_[id] = type == TokenizerData::kUserDefined || type == TokenizerData::kControl
                                ? token
                                : Gpt2UnicodeToBytes(token).value_or(token);
  }
  if (tokenizer->pre_tokenizer_->traits().ignore_merges) {
    for (size_t id = 0; id < n; ++id) {
      if (tokenizer->TokenType(static_cast<int>(id)) == TokenizerData::kNormal) {
        tokenizer->whole_tokens_.try_emplace(tokenizer->bytes_[id], static_cast<int>(id));
      }
    }
  }
  return tokenizer;
}

Gpt2Tokenizer::Gpt2Tokenizer(TokenizerData data, std::unique_ptr<BpePreTokenizer> pre_tokenizer)
    : VocabularyTokenizer(std::move(data), EncodeRules{}),
      pre_tokenizer_(std::move(pre_tokenizer)) {}

Gpt2Tokenizer::~Gpt2Tokenizer() = default;

void Gpt2Tokenizer::EncodeText(std::string_view text, bool /*after_special*/,
                               std::vector<int>* out) const {
  std::vector<int>& ids = *out;
  // Words repeat a lot: reuse the ids of an identical earlier chunk of this call (they are
  // already in `ids`). Per call, so nothing mutable is shared between threads.
  absl::flat_hash_map<absl::string_view, std::pair<size_t, size_t>> seen;  // -> [begin, end)
  for (std::string_view chunk : pre_tokenizer_->Split(text)) {
    const absl::string_view key(chunk.data(), chunk.size());
    if (auto it = seen.find(key); it != seen.end()) {
      const auto [begin, end] = it->second;
      for (size_t i = begin; i < end; ++i) ids.push_back(ids[i]);
      continue;
    }
    const size_t begin = ids.size();
    EncodeChunk(chunk, &ids);
    if (chunk.size() <= kMaxCachedChunkBytes) seen.emplace(key, std::make_pair(begin, ids.size()));
  }
}

void Gpt2Tokenizer::EncodeChunk(std::string_view chunk, std::vector<int>* ids) const {
  if (!whole_tokens_.empty()) {
    if (auto it = whole_tokens_.find(absl::string_view(chunk.data(), chunk.size()));
        it != whole_tokens_.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  // symbols[i] = current token id of piece i; -1 once merged into its left neighbour.
  const int n = static_cast<int>(chunk.size());
  std::vector<int> symbols(n), prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    symbols[i] = byte_ids_[static_cast<uint8_t>(chunk[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> agenda;
  auto consider = [&](int left, int right) {
    if (left < 0 || right < 0 || symbols[left] < 0 || symbols[right] < 0) return;
    auto it = merges_.find(PairKey(symbols[left], symbols[right]));
    if (it != merges_.end()) {
      agenda.push({it->second.rank, left, right, symbols[left], symbols[right]});
    }
  };
  for (int i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!agenda.empty()) {
    const Candidate top = agenda.top();
    agenda.pop();
    if (symbols[top.left] != top.left_id || symbols[top.right] != top.right_id ||
        next[top.left] != top.right) {
      continue;  // stale: one side changed since this candidate was pushed
    }
    symbols[top.left] = merges_.find(PairKey(top.left_id, top.right_id))->second.result_id;
    symbols[top.right] = -1;
    next[top.left] = next[top.right];
    if (next[top.left] >= 0) prev[next[top.left]] = top.left;
    consider(prev[top.left], top.left);
    consider(top.left, next[top.left]);
  }
  // A byte the vocabulary has no token for is dropped, as llama.cpp does (StarCoder's and
  // Falcon's vocabularies lack some). Never <unk>: that id can be a control token
  // (StarCoder's is <|endoftext|>), which user text must not be able to produce.
  for (int i = 0; i >= 0 && i < n; i = next[i]) {
    if (symbols[i] >= 0) ids->push_back(symbols[i]);
  }
}

std::string Gpt2Tokenizer::TokenBytes(int id, int previous_id) const {
  if (id < 0 || id >= vocab_size()) return "";
  if (TokenType(id) == TokenizerData::kControl &&
      !std::binary_search(data_.printed_control_ids.begin(), data_.printed_control_ids.end(), id)) {
    return "";
  }
  return bytes_[id];
}

std::string Gpt2Tokenizer::TokenText(int id) const {
  if (id < 0 || id >= vocab_size()) return absl::StrCat("<invalid id ", id, ">");
  const std::string& bytes = bytes_[id];
  if (TokenType(id) == TokenizerData::kControl || IsValidUtf8(bytes)) return bytes;
  std::string text;  // part of a multi-byte character: show the bytes
  for (unsigned char c : bytes) {
    if (c < 0x80) {
      text.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&text, "<0x%02X>", c);
    }
  }
  return text;
}

}  // namespace textgen::model
