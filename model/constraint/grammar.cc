#include "model/constraint/grammar.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/base/status_macros.h"

namespace textgen::model {

ByteSet ByteSet::Single(uint8_t b) {
  ByteSet set;
  set.Add(b);
  return set;
}

ByteSet ByteSet::Range(uint8_t lo, uint8_t hi) {
  ByteSet set;
  set.AddRange(lo, hi);
  return set;
}

void ByteSet::AddRange(uint8_t lo, uint8_t hi) {
  for (int b = lo; b <= hi; ++b) Add(static_cast<uint8_t>(b));
}

ByteSet& ByteSet::operator|=(const ByteSet& other) {
  for (int i = 0; i < 4; ++i) words[i] |= other.words[i];
  return *this;
}

ByteSet& ByteSet::operator&=(const ByteSet& other) {
  for (int i = 0; i < 4; ++i) words[i] &= other.words[i];
  return *this;
}

ByteSet ByteSet::Minus(const ByteSet& other) const {
  ByteSet out;
  for (int i = 0; i < 4; ++i) out.words[i] = words[i] & ~other.words[i];
  return out;
}

int GrammarBuilder::AddRule(std::string name) {
  rules_.push_back({std::move(name), {}, false});
  return static_cast<int>(rules_.size()) - 1;
}

void GrammarBuilder::AddAlternative(int rule, Sequence sequence) {
  rules_[rule].alternatives.push_back(std::move(sequence));
}

int GrammarBuilder::RuleOf(std::string name, std::vector<Sequence> alternatives) {
  const int rule = AddRule(std::move(name));
  rules_[rule].alternatives = std::move(alternatives);
  return rule;
}

Symbol GrammarBuilder::Bytes(const ByteSet& set) {
  // Sets repeat a lot (a JSON string's character class once per property): share them.
  auto [it, inserted] =
      byte_set_ids_.try_emplace(set.words, static_cast<int32_t>(byte_sets_.size()));
  if (inserted) byte_sets_.push_back(set);
  return {Symbol::Kind::kBytes, it->second};
}

Sequence GrammarBuilder::Literal(std::string_view text) {
  Sequence sequence;
  for (char c : text) sequence.push_back(Bytes(ByteSet::Single(static_cast<uint8_t>(c))));
  return sequence;
}

int GrammarBuilder::Optional(std::string name, const Sequence& item) {
  return RuleOf(std::move(name), {item, {}});
}

int GrammarBuilder::Repeat(std::string name, const Sequence& item, int min, int max) {
  const int rule = AddRule(name);
  if (max < 0) {
    // item{min} tail, tail ::= item tail | nothing (right recursion: the matcher keeps a
    // constant stack through it).
    const int tail = AddRule(name + "-tail");
    Sequence again = item;
    again.push_back(Ref(tail));
    rules_[tail].alternatives = {again, {}};
    Sequence head;
    for (int i = 0; i < min; ++i) head.insert(head.end(), item.begin(), item.end());
    head.push_back(Ref(tail));
    rules_[rule].alternatives = {head};
    return rule;
  }
  // item{min} then up to max - min optional items, nested: opt_k ::= item opt_{k+1} | nothing.
  int next = -1;
  for (int k = max - min; k > 0; --k) {
    Sequence more = item;
    if (next >= 0) more.push_back(Ref(next));
    next = RuleOf(absl::StrCat(name, "-", k), {more, {}});
  }
  Sequence head;
  for (int i = 0; i < min; ++i) head.insert(head.end(), item.begin(), item.end());
  if (next >= 0) head.push_back(Ref(next));
  rules_[rule].alternatives = {head};
  return rule;
}

namespace {

// The rules of a left-recursive cycle, as "a -> b -> a".
std::string CycleText(const std::vector<int>& path, int start,
                      const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  bool in = false;
  for (int rule : path) {
    in = in || rule == start;
    if (in) parts.push_back(names[rule]);
  }
  parts.push_back(names[start]);
  return absl::StrJoin(parts, " -> ");
}

}  // namespace

bool GrammarBuilder::SymbolOk(const Symbol& s, const std::vector<bool>& rule_ok) const {
  return s.kind == Symbol::Kind::kBytes ? !byte_sets_[s.index].Empty() : rule_ok[s.index];
}

bool GrammarBuilder::Live(const Sequence& alt, const std::vector<bool>& productive) const {
  return std::all_of(alt.begin(), alt.end(),
                     [&](const Symbol& s) { return SymbolOk(s, productive); });
}

std::vector<bool> GrammarBuilder::ProductiveRules() const {
  const int n = static_cast<int>(rules_.size());
  // Productive rules: some alternative made only of productive symbols.
  std::vector<bool> productive(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (int r = 0; r < n; ++r) {
      if (productive[r]) continue;
      for (const Sequence& alt : rules_[r].alternatives) {
        if (std::all_of(alt.begin(), alt.end(),
                        [&](const Symbol& s) { return SymbolOk(s, productive); })) {
          productive[r] = changed = true;
          break;
        }
      }
    }
  }
  return productive;
}

absl::Status GrammarBuilder::CheckNoLeftRecursion(const std::vector<std::string>& names) const {
  const int n = static_cast<int>(rules_.size());
  // A rule reachable from itself through symbols that may come first (everything before them
  // can be empty). Over every rule and alternative: generated grammars never recurse to the
  // left, a GBNF file is told exactly.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (int r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const Sequence& alt : rules_[r].alternatives) {
        if (std::all_of(alt.begin(), alt.end(), [&](const Symbol& s) {
              return s.kind == Symbol::Kind::kRule && nullable[s.index];
            })) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<int>> leftmost(n);
  for (int r = 0; r < n; ++r) {
    for (const Sequence& alt : rules_[r].alternatives) {
      for (const Symbol& s : alt) {
        if (s.kind == Symbol::Kind::kBytes) break;
        leftmost[r].push_back(s.index);
        if (!nullable[s.index]) break;
      }
    }
  }
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<int> path;
  std::string cycle;
  // Iterative DFS (generated grammars can be deep).
  struct Frame {
    int rule;
    size_t next;
  };
  for (int start = 0; start < n && cycle.empty(); ++start) {
    if (color[start] != 0) continue;
    std::vector<Frame> stack = {{start, 0}};
    color[start] = 1;
    path = {start};
    while (!stack.empty() && cycle.empty()) {
      Frame& f = stack.back();
      if (f.next == leftmost[f.rule].size()) {
        color[f.rule] = 2;
        stack.pop_back();
        path.pop_back();
        continue;
      }
      const int to = leftmost[f.rule][f.next++];
      if (color[to] == 1) {
        cycle = CycleText(path, to, names);
      } else if (color[to] == 0) {
        color[to] = 1;
        stack.push_back({to, 0});
        path.push_back(to);
      }
    }
  }
  if (cycle.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "left recursion: ", cycle, " (rewrite it as repetition, e.g. list ::= item (\",\" item)*)"));
}

std::vector<bool> GrammarBuilder::ReachableRules(int root, const std::vector<bool>& productive,
                                                 bool through_dead) const {
  const int n = static_cast<int>(rules_.size());
  std::vector<bool> reachable(n, false);
  std::vector<int> work = {root};
  reachable[root] = true;
  while (!work.empty()) {
    const int r = work.back();
    work.pop_back();
    for (const Sequence& alt : rules_[r].alternatives) {
      if (!through_dead && !Live(alt, productive)) continue;
      for (const Symbol& s : alt) {
        if (s.kind == Symbol::Kind::kRule && !reachable[s.index]) {
          reachable[s.index] = true;
          work.push_back(s.index);
        }
      }
    }
  }
  return reachable;
}

absl::Status GrammarBuilder::CheckRules(int root, const std::vector<std::string>& names,
                                        const std::vector<bool>& reachable,
                                        const std::vector<bool>& productive,
                                        bool require_all_reachable) const {
  const int n = static_cast<int>(rules_.size());
  // Non-root rules first: a root that matches nothing usually has a culprit below it.
  std::vector<int> check_order;
  for (int r = 0; r < n; ++r) {
    if (r != root) check_order.push_back(r);
  }
  check_order.push_back(root);
  for (int r : check_order) {
    if (!reachable[r]) {
      if (require_all_reachable) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rule ", names[r], " is never used (it is unreachable from ", names[root], ")"));
      }
      continue;
    }
    if (rules_[r].alternatives.empty() && !rules_[r].may_be_empty) {
      return absl::InvalidArgumentError(absl::StrCat("rule ", names[r], " is not defined"));
    }
    if (!productive[r] && (require_all_reachable || r == root)) {
      return absl::InvalidArgumentError(absl::StrCat("rule ", names[r],
                                                     r == root
                                                         ? " matches nothing"
                                                         : " can never finish (every alternative "
                                                           "needs itself or an empty set)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Grammar> GrammarBuilder::Build(int root, const GrammarLimits& limits,
                                              bool require_all_reachable) const {
  const int n = static_cast<int>(rules_.size());
  std::vector<std::string> names;
  for (const Rule& r : rules_) names.push_back(r.name);
  const std::vector<bool> productive = ProductiveRules();
  // Left recursion first: the most specific complaint.
  TEXTGEN_RETURN_IF_ERROR(CheckNoLeftRecursion(names));
  // Reachable through live alternatives (through every one when all must be reachable).
  const std::vector<bool> reachable = ReachableRules(root, productive, require_all_reachable);
  TEXTGEN_RETURN_IF_ERROR(CheckRules(root, names, reachable, productive, require_all_reachable));
  Grammar g;
  g.byte_sets_ = byte_sets_;
  g.rule_names_ = names;
  g.root_ = root;
  g.alternatives_.resize(n);
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    if (!reachable[r]) continue;
    for (const Sequence& alt : rules_[r].alternatives) {
      if (Live(alt, productive)) total += static_cast<int64_t>(alt.size()) + 1;
    }
  }
  if (total > limits.max_positions) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the grammar needs ", total, " symbols, over the limit of ", limits.max_positions));
  }
  g.positions_.reserve(static_cast<size_t>(total));
  for (int r = 0; r < n; ++r) {
    if (!reachable[r]) continue;
    for (const Sequence& alt : rules_[r].alternatives) {
      if (!Live(alt, productive)) continue;
      g.alternatives_[r].push_back(static_cast<int32_t>(g.positions_.size()));
      for (const Symbol& s : alt) {
        g.positions_.push_back(
            {s.kind == Symbol::Kind::kBytes ? Grammar::Op::kBytes : Grammar::Op::kRule, s.index});
      }
      g.positions_.push_back({Grammar::Op::kEnd, r});
    }
  }
  g.ComputeByteClasses();
  return g;
}

void Grammar::ComputeByteClasses() {
  // Partition refinement: every byte set splits each class into its members and the rest.
  std::array<int, 256> cls{};
  int count = 1;
  std::vector<int> inside, outside;
  for (const ByteSet& set : byte_sets_) {
    inside.assign(static_cast<size_t>(count), -1);
    outside.assign(static_cast<size_t>(count), -1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      int& id = set.Has(static_cast<uint8_t>(b)) ? inside[cls[b]] : outside[cls[b]];
      if (id < 0) id = next++;
      cls[b] = id;
    }
    count = next;
  }
  class_bytes_.assign(static_cast<size_t>(count), ByteSet{});
  for (int b = 0; b < 256; ++b) {
    byte_class_[b] = static_cast<uint8_t>(cls[b]);
    class_bytes_[cls[b]].Add(static_cast<uint8_t>(b));
  }
}

}  // namespace textgen::model
