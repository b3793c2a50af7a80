#pragma once

// The vocabulary as a byte trie, in preorder, for computing token masks: a grammar state is
// advanced once per trie edge instead of once per byte of every token, and a subtree the
// state accepts whole is marked without visiting it. Built once per tokenizer; immutable;
// thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/constraint/grammar.h"
#include "model/tokenizer/tokenizer.h"

namespace textgen::model {

class TokenTrie {
 public:
  // Kept small (16 bytes): a mask walks nodes in order, so their size is its memory traffic.
  // A node's own tokens (spelled exactly by it) are order[own_begin, next.own_begin) and its
  // whole subtree's order[own_begin, nodes[end].own_begin), where `next` is the node after it;
  // a sentinel node closes the array, so both reads stay in bounds.
  struct Node {
    int32_t end;        // index after this node's last descendant
    int32_t own_begin;  // first token at or below this node, in `order`
    uint16_t depth;     // bytes from the root
    uint8_t byte;       // the edge into this node (unused for the root and the sentinel)
    uint8_t height;     // bytes on the longest path below this node, at most 255
    // UTF-8 characters (a partial one counts) on the longest path below, at most 255;
    // meaningful when kWholeCharsBelow is set.
    uint8_t chars;
    uint8_t flags;
  };
  static_assert(sizeof(Node) == 16);
  // The node's bytes end on a character boundary and every path below is a prefix of
  // strictly valid UTF-8: a walk may then judge the subtree by characters, not bytes.
  static constexpr uint8_t kWholeCharsBelow = 1;
  // Every token with bytes. Control tokens have none and are never in a mask, but those the
  // tokenizer prints (harmony's <|channel|>, ...) are spelled ControlTokenBytes(text): a
  // grammar allows one only where it writes it that way, never as text.
  static std::shared_ptr<const TokenTrie> Build(const Tokenizer& tokenizer);
  // A printed control token's bytes in the trie: its text after a 0xFF byte, which no UTF-8
  // text (so no JSON, regex or GBNF text) contains, and which Build leaves out of every other
  // token (a byte token 0xFF could otherwise spell the mark).
  static std::string ControlTokenBytes(std::string_view text);
  static constexpr char kControlMark = '\xFF';
  // From explicit token bytes (tests); empty strings are left out.
  static std::shared_ptr<const TokenTrie> FromBytes(std::vector<std::string> token_bytes);

  // The nodes in preorder, the root first and the sentinel last.
  const std::vector<Node>& nodes() const { return nodes_; }
  // Per node, the bytes on the edges below it: read only where a walk considers taking a
  // whole subtree, so kept apart from the nodes.
  const std::vector<ByteSet>& subtree_bytes() const { return subtree_bytes_; }
  // Token ids in byte order.
  const std::vector<int32_t>& order() const { return order_; }
  // Per entry of `order`, the token's UTF-8 characters (a partial one counts), at most 65535.
  const std::vector<uint16_t>& order_chars() const { return order_chars_; }
  // Per node, the UTF-8 characters its bytes span (a partial one counts), at most 65535.
  const std::vector<uint16_t>& path_chars() const { return path_chars_; }
  int vocab_size() const { return static_cast<int>(token_bytes_.size()); }
  int max_depth() const { return max_depth_; }
  // The bytes a token stands for inside generated text ("" for control tokens).
  const std::string& token_bytes(int id) const { return token_bytes_[id]; }

 private:
  std::vector<Node> nodes_;
  std::vector<ByteSet> subtree_bytes_;  // one per node
  std::vector<int32_t> order_;
  std::vector<uint16_t> order_chars_;
  std::vector<uint16_t> path_chars_;
  std::vector<std::string> token_bytes_;
  int max_depth_ = 0;
};

}  // namespace textgen::model
