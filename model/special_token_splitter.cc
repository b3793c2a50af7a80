#include "model/special_token_splitter.h"

#include <algorithm>

namespace textgen::model {

SpecialTokenSplitter::SpecialTokenSplitter(std::vector<std::pair<std::string, int>> tokens) {
  for (auto& token : tokens) {
    if (!token.first.empty()) tokens_.push_back(std::move(token));
  }
  // Longest first, so a token that contains a shorter one wins; ties by id for a fixed order.
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const auto& a, const auto& b) {
    return a.first.size() != b.first.size() ? a.first.size() > b.first.size() : a.second < b.second;
  });
}

std::vector<SpecialTokenSplitter::Segment> SpecialTokenSplitter::Split(
    std::string_view text) const {
  std::vector<Segment> segments;
  if (!text.empty()) segments.push_back({text, -1});
  for (const auto& [token, id] : tokens_) {
    if (text.find(token) == std::string_view::npos) continue;  // most tokens never occur
    std::vector<Segment> next;
    next.reserve(segments.size());
    for (const Segment& segment : segments) {
      if (segment.id >= 0) {
        next.push_back(segment);
        continue;
      }
      std::string_view rest = segment.text;
      for (size_t at; (at = rest.find(token)) != std::string_view::npos;) {
        if (at > 0) next.push_back({rest.substr(0, at), -1});
        next.push_back({rest.substr(at, token.size()), id});
        rest.remove_prefix(at + token.size());
      }
      if (!rest.empty()) next.push_back({rest, -1});
    }
    segments = std::move(next);
  }
  return segments;
}

}  // namespace textgen::model
