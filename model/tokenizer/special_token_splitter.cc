#include "model/tokenizer/special_token_splitter.h"

#include <algorithm>

namespace textgen::model {
namespace {

// llama.cpp strips with C isspace(): ASCII whitespace only.
bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

SpecialTokenSplitter::SpecialTokenSplitter(std::vector<Token> tokens) {
  for (Token& token : tokens) {
    if (!token.text.empty()) tokens_.push_back(std::move(token));
  }
  // Longest first, so a token that contains a shorter one wins; ties by id for a fixed order.
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const Token& a, const Token& b) {
    return a.text.size() != b.text.size() ? a.text.size() > b.text.size() : a.id < b.id;
  });
}

std::vector<SpecialTokenSplitter::Segment> SpecialTokenSplitter::Split(
    std::string_view text, std::span<const TextRange> untrusted) const {
  // Whether bytes [begin, end) of `text` touch an untrusted range.
  const auto overlaps_untrusted = [&](size_t begin, size_t end) {
    auto it = std::upper_bound(untrusted.begin(), untrusted.end(), begin,
                               [](size_t at, const TextRange& r) { return at < r.end; });
    return it != untrusted.end() && it->begin < end;
  };
  std::vector<Segment> segments;
  if (!text.empty()) segments.push_back({text, -1});
  for (const Token& token : tokens_) {
    if (text.find(token.text) == std::string_view::npos) continue;  // most never occur
    std::vector<Segment> next;
    next.reserve(segments.size());
    for (const Segment& segment : segments) {
      if (segment.id >= 0) {
        next.push_back(segment);
        continue;
      }
      std::string_view rest = segment.text;
      size_t skipped = 0;  // bytes of `rest` already searched: untrusted occurrences stay text
      for (size_t at; (at = rest.find(token.text, skipped)) != std::string_view::npos;) {
        const size_t offset = static_cast<size_t>(rest.data() - text.data()) + at;
        if (token.control && overlaps_untrusted(offset, offset + token.text.size())) {
          skipped = at + 1;
          continue;
        }
        skipped = 0;
        if (at > 0) next.push_back({rest.substr(0, at), -1});
        next.push_back({rest.substr(at, token.text.size()), token.id});
        rest.remove_prefix(at + token.text.size());
        if (token.rstrip) {
          while (!rest.empty() && IsAsciiSpace(rest.front())) rest.remove_prefix(1);
        }
      }
      if (!rest.empty()) next.push_back({rest, -1});
    }
    segments = std::move(next);
  }
  return segments;
}

std::vector<SpecialTokenSplitter::Token> VocabularySpecialTokens(const TokenizerData& data,
                                                                 bool control) {
  std::vector<SpecialTokenSplitter::Token> tokens;
  for (size_t id = 0; id < data.token_types.size(); ++id) {
    const int type = data.token_types[id];
    if (type == TokenizerData::kUserDefined || (control && type == TokenizerData::kControl)) {
      tokens.push_back(
          {data.tokens[id], static_cast<int>(id),
           std::binary_search(data.rstrip_ids.begin(), data.rstrip_ids.end(), static_cast<int>(id)),
           type == TokenizerData::kControl});
    }
  }
  return tokens;
}

}  // namespace textgen::model
