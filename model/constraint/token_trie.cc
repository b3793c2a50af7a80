#include "model/constraint/token_trie.h"

#include <algorithm>
#include <numeric>

namespace textgen::model {

std::shared_ptr<const TokenTrie> TokenTrie::Build(const Tokenizer& tokenizer) {
  std::vector<std::string> bytes(static_cast<size_t>(tokenizer.vocab_size()));
  // As text mid-stream: a SentencePiece piece keeps its leading space (no BOS before it).
  const int not_at_start = tokenizer.vocab_size();
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    if (!tokenizer.IsControl(id)) bytes[id] = tokenizer.TokenBytes(id, not_at_start);
  }
  return FromBytes(std::move(bytes));
}

std::shared_ptr<const TokenTrie> TokenTrie::FromBytes(std::vector<std::string> token_bytes) {
  auto trie = std::make_shared<TokenTrie>();
  trie->token_bytes_ = std::move(token_bytes);
  const std::vector<std::string>& bytes = trie->token_bytes_;
  std::vector<int32_t>& order = trie->order_;
  for (int32_t id = 0; id < static_cast<int32_t>(bytes.size()); ++id) {
    if (!bytes[id].empty()) order.push_back(id);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return bytes[a] < bytes[b]; });

  std::vector<Node>& nodes = trie->nodes_;
  std::vector<Subtree>& subtrees = trie->subtrees_;
  std::vector<int32_t> parent;
  nodes.push_back({0, 0, 0, 0, 0});
  subtrees.push_back({0, 0, {}});
  parent.push_back(-1);
  std::vector<int32_t> path = {0};  // path[d] = node at depth d
  const auto close_to = [&](size_t depth, int32_t k) {
    while (path.size() > depth + 1) {
      nodes[path.back()].end = static_cast<int32_t>(nodes.size());
      subtrees[path.back()].tokens_end = k;
      path.pop_back();
    }
  };
  const std::string* previous = nullptr;
  for (int32_t k = 0; k < static_cast<int32_t>(order.size()); ++k) {
    const std::string& b = bytes[order[k]];
    size_t lcp = 0;
    if (previous != nullptr) {
      while (lcp < b.size() && lcp < previous->size() && b[lcp] == (*previous)[lcp]) ++lcp;
    }
    close_to(lcp, k);
    if (previous != nullptr && lcp == b.size()) {
      nodes[path.back()].own_end = k + 1;  // same bytes as the previous token
    } else {
      for (size_t d = lcp + 1; d <= b.size(); ++d) {
        const bool last = d == b.size();
        nodes.push_back(
            {0, k, last ? k + 1 : k, static_cast<int32_t>(d), static_cast<uint8_t>(b[d - 1])});
        subtrees.push_back({0, 0, {}});
        parent.push_back(path.back());
        path.push_back(static_cast<int32_t>(nodes.size()) - 1);
      }
    }
    trie->max_depth_ = std::max(trie->max_depth_, static_cast<int>(b.size()));
    previous = &b;
  }
  close_to(0, static_cast<int32_t>(order.size()));
  nodes[0].end = static_cast<int32_t>(nodes.size());
  subtrees[0].tokens_end = static_cast<int32_t>(order.size());
  for (int32_t i = static_cast<int32_t>(nodes.size()) - 1; i > 0; --i) {
    Subtree& p = subtrees[parent[i]];
    p.bytes.Add(nodes[i].byte);
    p.bytes |= subtrees[i].bytes;
    p.height = std::max(p.height, subtrees[i].height + 1);
  }
  return trie;
}

}  // namespace textgen::model
