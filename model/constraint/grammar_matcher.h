#pragma once

// Where a sequence's output stands in its grammar, and which tokens may come next. The state
// is the set of parse stacks the output so far allows (stacks share their tails and are
// interned, so equal states have equal ids and everything derived from a state is memoized:
// the state each byte class leads to, in a dense table; the byte runs it accepts whole; its
// token mask). One per sequence; not thread-safe; never shared, so a sequence's masks do not
// depend on its batch.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "model/constraint/grammar.h"
#include "model/constraint/token_trie.h"

namespace textgen::model {

struct MatcherLimits {
  int max_stacks = 4096;          // parse stacks in one state (an ambiguous grammar's cost)
  int64_t max_nodes = 4'000'000;  // interned stack nodes over the whole output
  int64_t max_state_bytes = int64_t{256} << 20;  // nodes, states and their transition rows
  int cached_masks = 8;  // token masks kept per matcher (a JSON string reuses one)
};

class GrammarMatcher {
 public:
  GrammarMatcher(std::shared_ptr<const Grammar> grammar, MatcherLimits limits = {});

  // Consumes `bytes`; false (state unchanged) when they do not continue the language.
  bool Accept(std::string_view bytes);
  // Whether Accept(bytes) would succeed; the state does not change.
  bool CanAccept(std::string_view bytes);
  // The output so far is a whole string of the language.
  bool complete() const;
  // Some byte may still follow.
  bool can_continue() const;
  // Sets, in `allowed` (one bit per token id, ceil(vocab / 64) words, cleared first), every
  // token whose bytes keep the output a prefix of the language.
  void FillMask(const TokenTrie& trie, std::span<uint64_t> allowed);
  // A limit tripped (the state is then empty: nothing is allowed).
  const absl::Status& status() const { return status_; }

 private:
  static constexpr int32_t kAccept = 0;    // the empty stack: the string may end here
  static constexpr int32_t kUnknown = -2;  // a transition not computed yet
  // Longest byte run the subtree shortcut checks through a chain of states (a token is rarely
  // longer; a longer subtree is walked until its height fits).
  static constexpr int kMaxRun = 48;

  struct Node {
    int32_t position;
    int32_t parent;  // -1: the outermost rule
  };

  int32_t Intern(int32_t position, int32_t parent);
  // The node to return to after the symbol at `position` - 1: its parent when `position`
  // ends its alternative (so repetition by right recursion keeps the stack constant).
  int32_t Continuation(int32_t position, int32_t parent);
  // Adds the stacks `node` expands to (every top a byte set, or kAccept).
  void Expand(int32_t node, std::vector<int32_t>& out);
  int32_t InternSet(std::vector<int32_t>& stacks);
  // The state after `byte` from `set`; -1 when the byte is not allowed.
  int32_t Step(int32_t set, uint8_t byte) { return StepClass(set, grammar_->byte_class(byte)); }
  int32_t StepClass(int32_t set, int byte_class);
  // The bytes B such that every string of 1..`length` bytes from B is accepted from `set`
  // (exact when B leads to one state; a sufficient test, so masks never depend on it).
  ByteSet Run(int32_t set, int length);
  // Where whole characters lead from `set` along its uniform successors: entry j says which
  // characters the first j may be (ASCII bytes, and whether any multi-byte character) so that
  // each is accepted, and the state they reach. Sufficient like Run, but by characters: inside
  // a string, multi-byte characters pass through states of their own, so no byte run covers
  // them, and a bounded string's chain ends where its length does.
  struct CharChain {
    std::vector<ByteSet> ascii;
    std::vector<uint8_t> multibyte;
    std::vector<int32_t> state;
    bool loops = false;  // the first character leads back to `set`: every length is like 1
    bool ended = false;  // no entry can follow the last
  };
  // Whether the characters of a subtree (its ASCII bytes, and whether it has other bytes) may
  // all come first from `set`.
  bool FirstCharFits(int32_t set, const ByteSet& ascii, bool has_multibyte) const;
  // The chain of `set`, extended to `length` characters where it goes that far.
  const CharChain& Chain(int32_t set, int length);
  // Whether every multi-byte character leads from `set` to `to`, each prefix accepted (the
  // last answer per `set` is kept: callers ask about its one successor).
  bool MultibyteLeadsTo(int32_t set, int32_t to);
  bool MultibyteLeadsToUncached(int32_t set, int32_t to);
  // How many plain characters `set` takes in a row, each leading to one state, when no plain
  // character can follow them (kMaxPlainChars when any number can): the trie's plain slices
  // up to that many characters are then allowed exactly (TokenTrie). 0: not exactly known.
  struct PlainRuns {
    bool known = false;
    int8_t multibyte_chars = 0;  // the slice's longest token when `multibyte` was computed
    int8_t ascii = 0;
    int8_t multibyte = 0;
  };
  const PlainRuns& Plain(int32_t set, int multibyte_chars);
  // Marks the tokens of `trie` that `state_` allows.
  void Walk(const TokenTrie& trie, std::span<uint64_t> allowed);
  // Computes every transition of `set` (of `classes`) not known yet.
  void StepAllClasses(int32_t set);
  void StepClasses(int32_t set, const std::vector<int>& classes);
  // The state most bytes lead to from `set`, and those bytes.
  void ComputeUniform(int32_t set);
  void Fail(absl::Status status);

  std::shared_ptr<const Grammar> grammar_;
  MatcherLimits limits_;
  absl::Status status_;
  std::vector<Node> nodes_;
  absl::flat_hash_map<uint64_t, int32_t> node_ids_;
  std::vector<std::vector<int32_t>> sets_;
  absl::flat_hash_map<std::vector<int32_t>, int32_t> set_ids_;
  int byte_classes_;
  std::vector<uint8_t> class_byte_;   // one byte of each class
  std::vector<int> all_classes_;      // 0 .. byte_classes_ - 1
  std::vector<int> plain_classes_;    // the classes with a plain byte
  std::vector<int32_t> transitions_;  // set * byte_classes_ + class -> set (-1: not allowed)
  int64_t set_entries_ = 0;           // stacks over all sets (for max_state_bytes)
  std::vector<ByteSet> first_bytes_;
  struct Uniform {
    bool known = false;
    int32_t successor = -1;
    ByteSet bytes;
    uint64_t runs_known = 0;  // bit h: runs[h] is known
    std::vector<ByteSet> runs;
    bool chain_started = false;
    PlainRuns plain;
    int32_t multibyte_checked_to = kUnknown;  // MultibyteLeadsTo's last question
    bool multibyte_leads = false;
    CharChain chain;
  };
  std::vector<Uniform> uniform_;
  std::vector<int32_t> depth_sets_;    // FillMask scratch
  std::vector<int32_t> plain_chain_;   // Plain scratch
  std::vector<int32_t> step_scratch_;  // StepClass scratch
  // Per multi-byte UTF-8 shape, per byte range, the byte classes in it.
  std::vector<std::vector<std::vector<int>>> shape_classes_;
  std::vector<int32_t> expand_work_;  // Expand's stack
  struct CachedMask {
    int32_t set;
    std::vector<uint64_t> bits;
  };
  std::vector<CachedMask> masks_;  // most recent last
  int32_t state_ = -1;
};

}  // namespace textgen::model
