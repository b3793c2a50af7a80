#pragma once

// The vocabulary as a byte trie, in preorder, for computing token masks: a grammar state is
// advanced once per trie edge instead of once per byte of every token, and a subtree the
// state accepts whole is marked without visiting it. Built once per tokenizer; immutable;
// thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/constraint/grammar.h"
#include "model/tokenizer/tokenizer.h"

namespace textgen::model {

class TokenTrie {
 public:
  // Kept small: a mask walks nodes in order, so their size is its memory traffic.
  struct Node {
    int32_t end;        // index after this node's last descendant
    int32_t own_begin;  // tokens spelled exactly by this node: order[own_begin, own_end)
    int32_t own_end;
    int32_t depth;  // bytes from the root
    uint8_t byte;   // the edge into this node (unused for the root)
  };
  // What a walk needs only where it considers taking a whole subtree.
  struct Subtree {
    int32_t tokens_end;  // the whole subtree's tokens: order[own_begin, tokens_end)
    int32_t height;      // bytes on the longest path below this node
    ByteSet bytes;       // bytes on the edges below this node
  };

  // Every token with bytes (control tokens have none and are never in a mask).
  static std::shared_ptr<const TokenTrie> Build(const Tokenizer& tokenizer);
  // From explicit token bytes (tests); empty strings are left out.
  static std::shared_ptr<const TokenTrie> FromBytes(std::vector<std::string> token_bytes);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Subtree>& subtrees() const { return subtrees_; }
  // Token ids in byte order.
  const std::vector<int32_t>& order() const { return order_; }
  int vocab_size() const { return static_cast<int>(token_bytes_.size()); }
  int max_depth() const { return max_depth_; }
  // The bytes a token stands for inside generated text ("" for control tokens).
  const std::string& token_bytes(int id) const { return token_bytes_[id]; }

 private:
  std::vector<Node> nodes_;
  std::vector<Subtree> subtrees_;  // one per node
  std::vector<int32_t> order_;
  std::vector<std::string> token_bytes_;
  int max_depth_ = 0;
};

}  // namespace textgen::model
