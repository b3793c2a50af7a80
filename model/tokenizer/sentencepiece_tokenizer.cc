#include "model/tokenizer/sentencepiece_tokenizer.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "model/base/status_macros.h"
#include "model/tokenizer/utf8.h"

namespace textgen::model {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // "▁"
// What sentencepiece prints for <unk> (TrainerSpec.unk_surface default " ⁇ ").
constexpr std::string_view kUnknownSurface = " \xE2\x81\x87 ";

// Parses "<0xXX>" (upper- or lower-case hex); returns -1 for anything else.
int ParseByteToken(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int value = 0;
  for (char c : piece.substr(3, 2)) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// One piece of the text during merging: bytes [start, start + length) of the normalised
// text, in a doubly linked list. length 0 marks a piece merged into its left neighbour.
struct Symbol {
  int start;
  int length;
  int prev;
  int next;
};

// A candidate merge of symbols `left` and `left`'s right neighbour `right`.
struct Candidate {
  float score;
  int left;
  int right;
  int length;  // bytes of the merged piece; detects candidates made stale by other merges
};

// Highest score first; on ties the leftmost pair (sentencepiece's SymbolPairComparator).
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

struct SentencePieceTokenizer::MergeScratch {
  std::vector<Symbol> symbols;
  std::vector<Candidate> agenda;  // binary heap ordered by CandidateOrder
};

absl::StatusOr<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::Create(
    TokenizerData data) {
  TEXTGEN_RETURN_IF_ERROR(ValidateVocabulary(data, "sentencepiece"));
  if (data.scores.size() != data.tokens.size()) {
    return absl::InvalidArgumentError(absl::StrCat("sentencepiece vocabulary: ", data.scores.size(),
                                                   " scores for ", data.tokens.size(), " tokens"));
  }
  return std::unique_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(std::move(data)));
}

SentencePieceTokenizer::SentencePieceTokenizer(TokenizerData data)
    : VocabularyTokenizer(std::move(data),
                          EncodeRules{.repair_utf8 = false, .space_symbol_is_space = true}) {
  byte_ids_.fill(-1);
  const int n = vocab_size();
  if (data_.token_types.empty()) {
    // No types given: infer them the way llama.cpp's converters assign them.
    data_.token_types.assign(n, TokenizerData::kNormal);
    for (int id = 0; id < n; ++id) {
      if (ParseByteToken(data_.tokens[id]) >= 0) data_.token_types[id] = TokenizerData::kByte;
    }
    if (data_.unk_id >= 0) data_.token_types[data_.unk_id] = TokenizerData::kUnknown;
    if (data_.bos_id >= 0) data_.token_types[data_.bos_id] = TokenizerData::kControl;
    if (data_.eos_id >= 0) data_.token_types[data_.eos_id] = TokenizerData::kControl;
    FindSpecialTokens();  // the base found none: there were no types to read
  }
  surface_.resize(n);
  mergeable_ids_.reserve(n);
  for (int id = 0; id < n; ++id) {
    const std::string& piece = data_.tokens[id];
    switch (TokenType(id)) {
      case TokenizerData::kNormal:
      case TokenizerData::kUserDefined:
        mergeable_ids_.emplace(piece, id);  // first id wins for duplicate pieces
        surface_[id] = absl::StrReplaceAll(piece, {{"\xE2\x96\x81", " "}});
        break;
      case TokenizerData::kByte: {
        const int byte = ParseByteToken(piece);
        if (byte >= 0) {
          if (byte_ids_[byte] < 0) byte_ids_[byte] = id;
          surface_[id] = std::string(1, static_cast<char>(byte));
        }
        break;
      }
      case TokenizerData::kUnknown:
        surface_[id] = std::string(kUnknownSurface);
        break;
      case TokenizerData::kUnused:
        surface_[id] = absl::StrReplaceAll(piece, {{"\xE2\x96\x81", " "}});
        break;
      default:  // control and unrecognised types are invisible
        break;
    }
  }
  // Segmenting is exact when no mergeable piece has a "▁" after its leading run of "▁"s
  // (true for Llama: pieces are "▁word" or whitespace only): then no merge can join a
  // non-space character with a following "▁".
  segment_at_space_ = true;
  for (const auto& [piece, id] : mergeable_ids_) {
    std::string_view rest(piece);
    while (rest.substr(0, kSpaceSymbol.size()) == kSpaceSymbol)
      rest.remove_prefix(kSpaceSymbol.size());
    if (rest.find(kSpaceSymbol) != std::string_view::npos) segment_at_space_ = false;
  }
}

int SentencePieceTokenizer::MergeablePieceId(std::string_view piece) const {
  auto it = mergeable_ids_.find(absl::string_view(piece.data(), piece.size()));
  return it == mergeable_ids_.end() ? -1 : it->second;
}

void SentencePieceTokenizer::AppendPieceIds(std::string_view piece, std::vector<int>* ids) const {
  const int id = MergeablePieceId(piece);
  if (id >= 0) {
    ids->push_back(id);
    return;
  }
  bool have_all_bytes = true;
  for (char c : piece) have_all_bytes = have_all_bytes && byte_ids_[static_cast<uint8_t>(c)] >= 0;
  if (have_all_bytes) {
    for (char c : piece) ids->push_back(byte_ids_[static_cast<uint8_t>(c)]);
  } else if (data_.unk_id >= 0) {
    ids->push_back(data_.unk_id);
  }
}

void SentencePieceTokenizer::EncodeText(std::string_view text, bool after_special,
                                        std::vector<int>* out) const {
  std::vector<int>& ids = *out;
  if (text.empty()) return;  // sentencepiece adds no dummy prefix to empty input

  // Normalise: dummy prefix, then every space becomes "▁".
  std::string normalized;
  normalized.reserve(text.size() + text.size() / 2 + kSpaceSymbol.size());
  if (data_.add_space_prefix && after_special) normalized.append(kSpaceSymbol);
  for (char c : text) {
    if (c == ' ') {
      normalized.append(kSpaceSymbol);
    } else {
      normalized.push_back(c);
    }
  }
  const std::string_view norm(normalized);

  // Merge segment by segment when merges cannot cross a segment start (see
  // segment_at_space_); small segments keep the agenda in cache, which matters on long text.
  MergeScratch scratch;
  size_t segment_start = 0;
  if (segment_at_space_) {
    const size_t width = kSpaceSymbol.size();
    for (size_t pos = norm.find(kSpaceSymbol, width); pos != std::string_view::npos;
         pos = norm.find(kSpaceSymbol, pos + width)) {
      if (norm.compare(pos - width, width, kSpaceSymbol) != 0) {  // "x▁": a word starts
        EncodeSegment(norm.substr(segment_start, pos - segment_start), &scratch, &ids);
        segment_start = pos;
      }
    }
  }
  EncodeSegment(norm.substr(segment_start), &scratch, &ids);
}

void SentencePieceTokenizer::EncodeSegment(std::string_view norm, MergeScratch* scratch,
                                           std::vector<int>* ids) const {
  // Start with one symbol per UTF-8 character (a stray invalid byte is a symbol of its own).
  std::vector<Symbol>& symbols = scratch->symbols;
  symbols.clear();
  for (size_t pos = 0; pos < norm.size();) {
    const Utf8Prefix prefix = NextUtf8Prefix(norm.substr(pos));
    const int length = prefix.kind == Utf8Prefix::kChar ? prefix.length : 1;
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({static_cast<int>(pos), length, index - 1, index + 1});
    pos += length;
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  // A binary heap over scratch->agenda: highest score first, leftmost on ties.
  std::vector<Candidate>& agenda = scratch->agenda;
  agenda.clear();
  auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int length = symbols[left].length + symbols[right].length;
    const int id = MergeablePieceId(norm.substr(symbols[left].start, length));
    if (id >= 0) {
      agenda.push_back({data_.scores[id], left, right, length});
      std::push_heap(agenda.begin(), agenda.end(), CandidateOrder());
    }
  };
  for (size_t i = 1; i < symbols.size(); ++i) consider(static_cast<int>(i) - 1, i);

  while (!agenda.empty()) {
    std::pop_heap(agenda.begin(), agenda.end(), CandidateOrder());
    const Candidate top = agenda.back();
    agenda.pop_back();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.length == 0 || right.length == 0 || left.length + right.length != top.length) {
      continue;  // one side already merged elsewhere
    }
    left.length = top.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    consider(left.prev, top.left);
    consider(top.left, left.next);
  }

  for (int i = 0; i >= 0; i = symbols[i].next) {
    AppendPieceIds(norm.substr(symbols[i].start, symbols[i].length), ids);
  }
}

std::string SentencePieceTokenizer::TokenBytes(int id, int previous_id) const {
  if (id < 0 || id >= vocab_size()) return "";
  const std::string& surface = surface_[id];
  // The dummy prefix: the first piece of a text (after BOS or at the start) loses its space.
  const bool at_start = previous_id < 0 || previous_id == data_.bos_id;
  const int type = TokenType(id);
  if (at_start && (type == TokenizerData::kNormal || type == TokenizerData::kUserDefined) &&
      !surface.empty() && surface[0] == ' ') {
    return surface.substr(1);
  }
  return surface;
}

std::string SentencePieceTokenizer::TokenText(int id) const {
  if (id < 0 || id >= vocab_size()) return absl::StrCat("<invalid id ", id, ">");
  const int type = TokenType(id);
  if (type == TokenizerData::kNormal || type == TokenizerData::kUserDefined ||
      type == TokenizerData::kUnused) {
    return SanitizeUtf8(surface_[id]);
  }
  return SanitizeUtf8(data_.tokens[id]);  // "<s>", "<unk>", "<0x0A>" as stored
}

}  // namespace textgen::model
