#pragma once

// The vocabulary as a byte trie, in preorder, for computing token masks: a grammar state is
// advanced once per trie edge instead of once per byte of every token, and a subtree the
// state accepts whole is marked without visiting it. Built once per tokenizer; immutable;
// thread-safe.

#include <cstdint>
#include <memory>
#include <span>
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

  // Two slices of plain tokens, marked without a walk. Inside a string nearly every token is
  // allowed and a walk would visit most of the trie, but a state that takes any L plain
  // characters in a row (each to one state), and none after them, allows exactly the slice's
  // tokens of at most L characters. Plain: printable ASCII other than '"' and '\\' (what a JSON
  // string takes as itself, and most free text), and multi-byte characters.
  // - ASCII: tokens of plain ASCII bytes only, at most kMaxPlainChars;
  // - multi-byte: tokens of plain characters with at least one multi-byte character, at most
  //   kMaxPlainChars characters (apart: their test needs the state's multi-byte steps).
  // A walk then covers only `rest()` (neither slice) or `rest_with_multibyte()` (not ASCII).
  static constexpr int kMaxPlainChars = 48;
  static const ByteSet& PlainAsciiBytes();
  // The ASCII slice's tokens of 1..`chars` characters, one bit per token id (ceil(vocab / 64)
  // words).
  std::span<const uint64_t> plain_ascii_up_to(int chars) const { return Row(plain_ascii_, chars); }
  // The multi-byte slice's tokens of 1..`chars` characters, `chars` at most
  // max_plain_multibyte_chars().
  std::span<const uint64_t> plain_multibyte_up_to(int chars) const {
    return Row(plain_multibyte_, chars);
  }
  // The most characters in a token of the multi-byte slice (0: the slice is empty).
  int max_plain_multibyte_chars() const { return max_plain_multibyte_chars_; }
  // The tries of every token outside both slices, and outside the ASCII one, with the same
  // ids; null for those tries themselves.
  const TokenTrie* rest() const { return rest_.get(); }
  const TokenTrie* rest_with_multibyte() const { return rest_with_multibyte_.get(); }

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
  // Rows of ceil(vocab / 64) words, row L - 1 holding the tokens of at most L characters.
  std::vector<uint64_t> plain_ascii_;
  std::vector<uint64_t> plain_multibyte_;
  int max_plain_multibyte_chars_ = 0;
  std::shared_ptr<const TokenTrie> rest_;
  std::shared_ptr<const TokenTrie> rest_with_multibyte_;

  std::span<const uint64_t> Row(const std::vector<uint64_t>& rows, int chars) const {
    const size_t words = (static_cast<size_t>(vocab_size()) + 63) / 64;
    return {rows.data() + static_cast<size_t>(chars - 1) * words, words};
  }
  static std::shared_ptr<TokenTrie> Nodes(std::vector<std::string> token_bytes);
  void SplitPlainSlices();
};

}  // namespace textgen::model
