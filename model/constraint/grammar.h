#pragma once

// A context-free grammar over bytes, the form every constraint (JSON Schema, regex, GBNF)
// compiles to. Rules are alternatives of sequences of byte sets and rule references; the
// builder expands repetitions into rules and Build() checks the result (every rule defined,
// productive and reachable, no left recursion, within the size limit) and flattens it into
// positions a GrammarMatcher walks. Immutable once built; thread-safe.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace textgen::model {

// A set of bytes, bit b of word b / 64.
struct ByteSet {
  std::array<uint64_t, 4> words{};

  static ByteSet Single(uint8_t b);
  static ByteSet Range(uint8_t lo, uint8_t hi);
  static ByteSet All() { return Range(0, 255); }
  bool Has(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
  void Add(uint8_t b) { words[b >> 6] |= uint64_t{1} << (b & 63); }
  void AddRange(uint8_t lo, uint8_t hi);
  ByteSet& operator|=(const ByteSet& other);
  ByteSet& operator&=(const ByteSet& other);
  ByteSet Minus(const ByteSet& other) const;
  bool Empty() const { return (words[0] | words[1] | words[2] | words[3]) == 0; }
  // Inline: a mask walk asks this at every trie node it visits.
  bool SubsetOf(const ByteSet& other) const {
    return ((words[0] & ~other.words[0]) | (words[1] & ~other.words[1]) |
            (words[2] & ~other.words[2]) | (words[3] & ~other.words[3])) == 0;
  }
  bool operator==(const ByteSet& other) const = default;
};

// One item of a sequence: bytes from a set, or a rule.
struct Symbol {
  enum class Kind : uint8_t { kBytes, kRule };
  Kind kind;
  int32_t index;  // into the builder's byte sets, or a rule id
};
using Sequence = std::vector<Symbol>;

struct GrammarLimits {
  int64_t max_positions = 1 << 20;  // flattened symbols; each costs ~10 bytes
};

class Grammar;

class GrammarBuilder {
 public:
  // A new rule without alternatives yet; `name` is for messages.
  int AddRule(std::string name);
  void AddAlternative(int rule, Sequence sequence);
  // A rule with the given alternatives.
  int RuleOf(std::string name, std::vector<Sequence> alternatives);
  bool defined(int rule) const { return !rules_[rule].alternatives.empty(); }
  int rule_count() const { return static_cast<int>(rules_.size()); }
  const std::string& rule_name(int rule) const { return rules_[rule].name; }
  // Marks a rule as allowed to have no alternatives (the empty language: "nothing matches").
  void AllowEmpty(int rule) { rules_[rule].may_be_empty = true; }

  Symbol Bytes(const ByteSet& set);
  static Symbol Ref(int rule) { return {Symbol::Kind::kRule, rule}; }
  // The bytes of `text`, one symbol each.
  Sequence Literal(std::string_view text);
  // `item` repeated between min and max times (max < 0: unbounded), as a rule.
  int Repeat(std::string name, const Sequence& item, int min, int max);
  // Optional `item`: a rule of item | nothing.
  int Optional(std::string name, const Sequence& item);

  // Checks and flattens the grammar rooted at `root`. `require_all_reachable` refuses unused
  // rules (a GBNF file's typo); generated grammars may leave helpers unused.
  absl::StatusOr<Grammar> Build(int root, const GrammarLimits& limits,
                                bool require_all_reachable = false) const;

 private:
  // Build's checks, each over every rule.
  bool SymbolOk(const Symbol& s, const std::vector<bool>& rule_ok) const;
  // Whether every symbol of `alt` can match something.
  bool Live(const Sequence& alt, const std::vector<bool>& productive) const;
  // Rules with an alternative of productive symbols only.
  std::vector<bool> ProductiveRules() const;
  absl::Status CheckNoLeftRecursion(const std::vector<std::string>& names) const;
  std::vector<bool> ReachableRules(int root, const std::vector<bool>& productive,
                                   bool through_dead) const;
  // Unused (when all must be reachable), undefined and never-finishing rules.
  absl::Status CheckRules(int root, const std::vector<std::string>& names,
                          const std::vector<bool>& reachable, const std::vector<bool>& productive,
                          bool require_all_reachable) const;
  friend class Grammar;
  struct Rule {
    std::string name;
    std::vector<Sequence> alternatives;
    bool may_be_empty = false;
  };
  std::vector<Rule> rules_;
  std::vector<ByteSet> byte_sets_;
  absl::flat_hash_map<std::array<uint64_t, 4>, int32_t> byte_set_ids_;
};

// The flattened grammar. A position is one symbol of one alternative, or the end of one
// alternative; positions of an alternative are consecutive.
class Grammar {
 public:
  enum class Op : uint8_t { kBytes, kRule, kEnd };
  struct Position {
    Op op;
    int32_t index;  // byte set for kBytes, rule for kRule
  };

  const Position& at(int32_t position) const { return positions_[position]; }
  const ByteSet& byte_set(int32_t index) const { return byte_sets_[index]; }
  // First position of each alternative of `rule`.
  const std::vector<int32_t>& alternatives(int32_t rule) const { return alternatives_[rule]; }
  int32_t root() const { return root_; }
  int64_t positions() const { return static_cast<int64_t>(positions_.size()); }
  const std::string& rule_name(int32_t rule) const { return rule_names_[rule]; }

  // Bytes that no byte set tells apart form a class (a JSON grammar has a few dozen): a
  // matcher memoizes one transition per class instead of one per byte.
  int byte_class_count() const { return static_cast<int>(class_bytes_.size()); }
  uint8_t byte_class(uint8_t byte) const { return byte_class_[byte]; }
  const ByteSet& class_bytes(int byte_class) const { return class_bytes_[byte_class]; }

 private:
  friend class GrammarBuilder;
  void ComputeByteClasses();

  std::vector<Position> positions_;
  std::vector<ByteSet> byte_sets_;
  std::vector<std::vector<int32_t>> alternatives_;
  std::vector<std::string> rule_names_;
  int32_t root_ = 0;
  std::array<uint8_t, 256> byte_class_{};
  std::vector<ByteSet> class_bytes_;
};

}  // namespace textgen::model
