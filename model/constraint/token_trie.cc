#include "model/constraint/token_trie.h"

#include <algorithm>
#include <numeric>

#include "model/constraint/char_class.h"

namespace textgen::model {
namespace {

// Where a byte string stands in strict UTF-8: on a character boundary (0), invalid (-1), or
// 1 + 4 * shape + the continuation byte expected next.
constexpr int kBoundary = 0;
constexpr int kInvalid = -1;

int Utf8Step(int state, uint8_t byte) {
  const std::vector<Utf8Shape>& shapes = MultibyteUtf8Shapes();
  if (state == kInvalid) return kInvalid;
  if (state == kBoundary) {
    if (byte < 0x80) return kBoundary;
    for (size_t shape = 0; shape < shapes.size(); ++shape) {
      if (byte >= shapes[shape][0].first && byte <= shapes[shape][0].second) {
        return 1 + static_cast<int>(shape) * 4 + 1;
      }
    }
    return kInvalid;
  }
  const int shape = (state - 1) / 4;
  const int at = (state - 1) % 4;
  const auto [lo, hi] = shapes[static_cast<size_t>(shape)][static_cast<size_t>(at)];
  if (byte < lo || byte > hi) return kInvalid;
  return at + 1 == static_cast<int>(shapes[static_cast<size_t>(shape)].size()) ? kBoundary
                                                                               : state + 1;
}

}  // namespace

std::shared_ptr<const TokenTrie> TokenTrie::Build(const Tokenizer& tokenizer) {
  std::vector<std::string> bytes(static_cast<size_t>(tokenizer.vocab_size()));
  // As text mid-stream: a SentencePiece piece keeps its leading space (no BOS before it).
  const int not_at_start = tokenizer.vocab_size();
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    bytes[id] = tokenizer.TokenBytes(id, not_at_start);
    if (tokenizer.IsControl(id)) {
      if (!bytes[id].empty()) bytes[id] = ControlTokenBytes(bytes[id]);
    } else if (bytes[id].find(kControlMark) != std::string::npos) {
      // A byte token 0xFF (or a piece holding one): no grammar's UTF-8 text accepts it, and
      // left in it could spell the mark of a control token.
      bytes[id].clear();
    }
  }
  return FromBytes(std::move(bytes));
}

std::string TokenTrie::ControlTokenBytes(std::string_view text) {
  std::string bytes(1, kControlMark);
  bytes.append(text);
  return bytes;
}

std::shared_ptr<const TokenTrie> TokenTrie::FromBytes(std::vector<std::string> token_bytes) {
  std::shared_ptr<TokenTrie> trie = Nodes(std::move(token_bytes));
  trie->SplitPlainSlices();
  return trie;
}

const ByteSet& TokenTrie::PlainAsciiBytes() {
  static const ByteSet kPlain =
      ByteSet::Range(0x20, 0x7E).Minus(ByteSet::Single('"')).Minus(ByteSet::Single('\\'));
  return kPlain;
}

void TokenTrie::SplitPlainSlices() {
  const size_t words = (static_cast<size_t>(vocab_size()) + 63) / 64;
  const auto rows = static_cast<size_t>(kMaxPlainChars);
  plain_ascii_.assign(rows * words, 0);
  plain_multibyte_.assign(rows * words, 0);
  std::vector<std::string> rest = token_bytes_;
  std::vector<std::string> rest_with_multibyte = token_bytes_;
  for (int id = 0; id < vocab_size(); ++id) {
    const std::string& bytes = token_bytes_[id];
    if (bytes.empty()) continue;
    // Whole characters, each plain ASCII or a strictly valid multi-byte one.
    int utf8 = kBoundary;
    int chars = 0;
    bool plain = true, multibyte = false;
    for (char c : bytes) {
      const auto byte = static_cast<uint8_t>(c);
      if (utf8 == kBoundary) {
        ++chars;
        if (byte < 0x80 && !PlainAsciiBytes().Has(byte)) plain = false;
        multibyte = multibyte || byte >= 0x80;
      }
      utf8 = Utf8Step(utf8, byte);
      if (utf8 == kInvalid) plain = false;
      if (!plain) break;
    }
    if (!plain || utf8 != kBoundary || chars > kMaxPlainChars) continue;
    std::vector<uint64_t>& slice = multibyte ? plain_multibyte_ : plain_ascii_;
    slice[static_cast<size_t>(chars - 1) * words + static_cast<size_t>(id) / 64] |= uint64_t{1}
                                                                                    << (id % 64);
    rest[id].clear();
    if (multibyte) {
      max_plain_multibyte_chars_ = std::max(max_plain_multibyte_chars_, chars);
    } else {
      rest_with_multibyte[id].clear();
    }
  }
  for (std::vector<uint64_t>* slice : {&plain_ascii_, &plain_multibyte_}) {
    for (size_t row = 1; row < rows; ++row) {
      for (size_t w = 0; w < words; ++w) {
        (*slice)[row * words + w] |= (*slice)[(row - 1) * words + w];
      }
    }
  }
  rest_ = Nodes(std::move(rest));
  rest_with_multibyte_ = Nodes(std::move(rest_with_multibyte));
}

std::shared_ptr<TokenTrie> TokenTrie::Nodes(std::vector<std::string> token_bytes) {
  auto trie = std::make_shared<TokenTrie>();
  trie->token_bytes_ = std::move(token_bytes);
  const std::vector<std::string>& bytes = trie->token_bytes_;
  std::vector<int32_t>& order = trie->order_;
  // A token longer than a node's depth can count (no real vocabulary comes near) is left
  // out: a constraint then never allows it.
  constexpr size_t kMaxTokenBytes = 65535;
  for (int32_t id = 0; id < static_cast<int32_t>(bytes.size()); ++id) {
    if (!bytes[id].empty() && bytes[id].size() <= kMaxTokenBytes) order.push_back(id);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return bytes[a] < bytes[b]; });

  std::vector<Node>& nodes = trie->nodes_;
  std::vector<int32_t> parent;
  std::vector<int32_t> heights;  // unclamped, while building
  nodes.push_back({0, 0, 0, 0, 0, 0, 0});
  parent.push_back(-1);
  std::vector<int32_t> path = {0};  // path[d] = node at depth d
  const auto close_to = [&](size_t depth) {
    while (path.size() > depth + 1) {
      nodes[path.back()].end = static_cast<int32_t>(nodes.size());
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
    close_to(lcp);
    // Same bytes as the previous token: it joins that node's own tokens, which end where the
    // next node's begin.
    if (previous == nullptr || lcp != b.size()) {
      for (size_t d = lcp + 1; d <= b.size(); ++d) {
        // Tokens sort before their extensions, so a new node's first token is k.
        nodes.push_back({0, k, static_cast<uint16_t>(d), static_cast<uint8_t>(b[d - 1]), 0, 0, 0});
        parent.push_back(path.back());
        path.push_back(static_cast<int32_t>(nodes.size()) - 1);
      }
    }
    trie->max_depth_ = std::max(trie->max_depth_, static_cast<int>(b.size()));
    previous = &b;
  }
  close_to(0);
  nodes[0].end = static_cast<int32_t>(nodes.size());
  const int32_t real_nodes = static_cast<int32_t>(nodes.size());
  nodes.push_back({real_nodes + 1, static_cast<int32_t>(order.size()), 0, 0, 0, 0, 0});  // sentinel
  trie->subtree_bytes_.resize(nodes.size());
  heights.assign(nodes.size(), 0);
  // UTF-8 state after each node's bytes (parents precede children in preorder), then, bottom
  // up, whether everything below continues it validly and how many characters it spans.
  std::vector<int> utf8(nodes.size(), kBoundary);
  for (int32_t i = 1; i < real_nodes; ++i) utf8[i] = Utf8Step(utf8[parent[i]], nodes[i].byte);
  std::vector<int32_t> chars(nodes.size(), 0);
  trie->path_chars_.assign(nodes.size(), 0);
  for (int32_t i = 1; i < real_nodes; ++i) {
    const bool starts_char = utf8[parent[i]] == kBoundary;
    trie->path_chars_[i] = static_cast<uint16_t>(
        std::min(trie->path_chars_[parent[i]] + (starts_char ? 1 : 0), 65535));
  }
  std::vector<char> valid_below(nodes.size(), 1);
  for (int32_t i = real_nodes - 1; i > 0; --i) {
    const int32_t up = parent[i];
    trie->subtree_bytes_[up].Add(nodes[i].byte);
    trie->subtree_bytes_[up] |= trie->subtree_bytes_[i];
    heights[up] = std::max(heights[up], heights[i] + 1);
    const bool starts_char = utf8[up] == kBoundary;
    chars[up] = std::max(chars[up], chars[i] + (starts_char ? 1 : 0));
    if (utf8[i] == kInvalid || !valid_below[i]) valid_below[up] = 0;
  }
  // A token's characters are those of the deepest node it spells (tokens are node paths).
  trie->order_chars_.assign(order.size(), 0);
  for (int32_t i = 1; i < real_nodes; ++i) {
    for (int32_t k = nodes[i].own_begin; k < nodes[i + 1].own_begin; ++k) {
      trie->order_chars_[k] = trie->path_chars_[i];
    }
  }
  for (int32_t i = 0; i < real_nodes; ++i) {
    nodes[i].height = static_cast<uint8_t>(std::min(heights[i], 255));
    nodes[i].chars = static_cast<uint8_t>(std::min(chars[i], 255));
    if (utf8[i] == kBoundary && valid_below[i] && chars[i] <= 255) {
      nodes[i].flags |= kWholeCharsBelow;
    }
  }
  return trie;
}

}  // namespace textgen::model
