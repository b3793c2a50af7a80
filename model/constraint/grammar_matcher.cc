#include "model/constraint/grammar_matcher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace textgen::model {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, MatcherLimits limits)
    : grammar_(std::move(grammar)), limits_(limits), byte_classes_(grammar_->byte_class_count()) {
  for (int c = 0; c < byte_classes_; ++c) {
    const ByteSet& bytes = grammar_->class_bytes(c);
    int b = 0;
    while (!bytes.Has(static_cast<uint8_t>(b))) ++b;
    class_byte_.push_back(static_cast<uint8_t>(b));
  }
  nodes_.push_back({-1, -1});  // kAccept
  std::vector<int32_t> start;
  for (int32_t alt : grammar_->alternatives(grammar_->root())) Expand(Intern(alt, -1), start);
  state_ = InternSet(start);
}

void GrammarMatcher::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
}

int32_t GrammarMatcher::Intern(int32_t position, int32_t parent) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(position)) << 32) |
                       static_cast<uint32_t>(parent);
  auto [it, inserted] = node_ids_.try_emplace(key, static_cast<int32_t>(nodes_.size()));
  if (inserted) nodes_.push_back({position, parent});
  return it->second;
}

int32_t GrammarMatcher::Continuation(int32_t position, int32_t parent) {
  if (grammar_->at(position).op == Grammar::Op::kEnd) return parent;
  return Intern(position, parent);
}

void GrammarMatcher::Expand(int32_t node, std::vector<int32_t>& out) {
  // Iterative: a chain of rules (a ::= b, b ::= c, ...) must not grow the thread's stack.
  std::vector<int32_t>& work = expand_work_;
  work.assign(1, node);
  while (!work.empty()) {
    // Past the limit InternSet refuses the state; stop growing it.
    if (static_cast<int>(out.size()) > limits_.max_stacks) return;
    const int32_t current = work.back();
    work.pop_back();
    if (current < 0 || current == kAccept) {
      out.push_back(kAccept);
      continue;
    }
    const Node n = nodes_[current];
    const Grammar::Position& at = grammar_->at(n.position);
    switch (at.op) {
      case Grammar::Op::kBytes:
        out.push_back(current);
        break;
      case Grammar::Op::kEnd:
        work.push_back(n.parent);
        break;
      case Grammar::Op::kRule: {
        const int32_t next = Continuation(n.position + 1, n.parent);
        for (int32_t alt : grammar_->alternatives(at.index)) work.push_back(Intern(alt, next));
        break;
      }
    }
  }
}

int32_t GrammarMatcher::InternSet(std::vector<int32_t>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.empty()) return -1;
  if (static_cast<int>(stacks.size()) > limits_.max_stacks) {
    Fail(absl::ResourceExhaustedError(
        absl::StrCat("the grammar is too ambiguous here: ", stacks.size(),
                     " ways to parse the output so far (limit ", limits_.max_stacks, ")")));
    return -1;
  }
  if (static_cast<int64_t>(nodes_.size()) > limits_.max_nodes) {
    Fail(absl::ResourceExhaustedError(absl::StrCat(
        "the grammar's parse state outgrew its limit of ", limits_.max_nodes, " nodes")));
    return -1;
  }
  // Approximate bytes held: interned nodes, stack lists, and per set its transition row.
  const int64_t state_bytes = static_cast<int64_t>(nodes_.size()) * 32 + set_entries_ * 8 +
                              static_cast<int64_t>(sets_.size()) * (byte_classes_ * 4 + 160);
  if (state_bytes > limits_.max_state_bytes) {
    const int64_t limit = limits_.max_state_bytes;
    Fail(absl::ResourceExhaustedError(
        absl::StrCat("the grammar's parse state outgrew its memory limit of ",
                     limit >= (1 << 20) ? absl::StrCat(limit >> 20, " MiB")
                                        : absl::StrCat(limit >> 10, " KiB"))));
    return -1;
  }
  auto [it, inserted] = set_ids_.try_emplace(stacks, static_cast<int32_t>(sets_.size()));
  if (inserted) {
    sets_.push_back(stacks);
    set_entries_ += static_cast<int64_t>(stacks.size());
    ByteSet first;
    for (int32_t node : stacks) {
      if (node != kAccept) first |= grammar_->byte_set(grammar_->at(nodes_[node].position).index);
    }
    first_bytes_.push_back(first);
    transitions_.resize(transitions_.size() + static_cast<size_t>(byte_classes_), kUnknown);
    uniform_.emplace_back();
  }
  return it->second;
}

int32_t GrammarMatcher::StepClass(int32_t set, int byte_class) {
  const size_t slot = static_cast<size_t>(set) * static_cast<size_t>(byte_classes_) +
                      static_cast<size_t>(byte_class);
  if (transitions_[slot] != kUnknown) return transitions_[slot];
  // Every byte of a class behaves alike, so one stands for all.
  const uint8_t byte = class_byte_[byte_class];
  int32_t result = -1;
  if (first_bytes_[set].Has(byte)) {
    std::vector<int32_t> next;
    // Copy: Expand may grow sets_.
    const std::vector<int32_t> stacks = sets_[set];
    for (int32_t node : stacks) {
      if (node == kAccept) continue;
      const Node n = nodes_[node];
      if (!grammar_->byte_set(grammar_->at(n.position).index).Has(byte)) continue;
      Expand(Continuation(n.position + 1, n.parent), next);
    }
    result = InternSet(next);
  }
  transitions_[slot] = result;  // the slot's index holds even if the table grew
  return result;
}

void GrammarMatcher::ComputeUniform(int32_t set) {
  std::vector<std::pair<int32_t, int>> weights;  // successor, bytes leading there
  for (int c = 0; c < byte_classes_; ++c) {
    const int32_t next = StepClass(set, c);
    if (next < 0) continue;
    const ByteSet& bytes = grammar_->class_bytes(c);
    int count = 0;
    for (uint64_t w : bytes.words) count += __builtin_popcountll(w);
    auto it = std::find_if(weights.begin(), weights.end(),
                           [&](const auto& entry) { return entry.first == next; });
    if (it == weights.end()) {
      weights.emplace_back(next, count);
    } else {
      it->second += count;
    }
  }
  Uniform& u = uniform_[set];
  u.known = true;
  if (weights.empty()) return;
  const auto best =
      std::max_element(weights.begin(), weights.end(), [](const auto& a, const auto& b) {
        return a.second < b.second || (a.second == b.second && a.first > b.first);
      });
  u.successor = best->first;
  for (int c = 0; c < byte_classes_; ++c) {
    if (transitions_[static_cast<size_t>(set) * static_cast<size_t>(byte_classes_) +
                     static_cast<size_t>(c)] == u.successor) {
      u.bytes |= grammar_->class_bytes(c);
    }
  }
}

ByteSet GrammarMatcher::Run(int32_t set, int length) {
  if (length <= 1) return first_bytes_[set];
  if (!uniform_[set].known) ComputeUniform(set);
  const int32_t successor = uniform_[set].successor;
  if (successor < 0) return {};
  // A state its bytes lead back to accepts runs of any length.
  if (successor == set) return uniform_[set].bytes;
  if (length > kMaxRun) return {};
  if ((uniform_[set].runs_known >> length) & 1) return uniform_[set].runs[length];
  ByteSet run = uniform_[set].bytes;
  run &= Run(successor, length - 1);  // may grow uniform_: index again below
  Uniform& u = uniform_[set];
  if (u.runs.size() <= static_cast<size_t>(length)) u.runs.resize(static_cast<size_t>(length) + 1);
  u.runs[length] = run;
  u.runs_known |= uint64_t{1} << length;
  return run;
}

bool GrammarMatcher::Accept(std::string_view bytes) {
  int32_t set = state_;
  for (char c : bytes) {
    if (set < 0) return false;
    set = Step(set, static_cast<uint8_t>(c));
  }
  if (set < 0) return false;
  state_ = set;
  return true;
}

bool GrammarMatcher::CanAccept(std::string_view bytes) {
  int32_t set = state_;
  for (char c : bytes) {
    if (set < 0) return false;
    set = Step(set, static_cast<uint8_t>(c));
  }
  return set >= 0;
}

bool GrammarMatcher::complete() const {
  return state_ >= 0 && !sets_[state_].empty() && sets_[state_].front() == kAccept;
}

bool GrammarMatcher::can_continue() const { return state_ >= 0 && !first_bytes_[state_].Empty(); }

void GrammarMatcher::FillMask(const TokenTrie& trie, std::span<uint64_t> allowed) {
  std::fill(allowed.begin(), allowed.end(), 0);
  if (state_ < 0) return;
  for (auto it = masks_.begin(); it != masks_.end(); ++it) {
    if (it->set == state_ && it->bits.size() == allowed.size()) {
      std::copy(it->bits.begin(), it->bits.end(), allowed.begin());
      std::rotate(it, it + 1, masks_.end());  // most recent last
      return;
    }
  }
  const std::vector<TokenTrie::Node>& nodes = trie.nodes();
  const std::vector<TokenTrie::Subtree>& subtrees = trie.subtrees();
  const std::vector<int32_t>& order = trie.order();
  const auto mark = [&](int32_t begin, int32_t end) {
    for (int32_t k = begin; k < end; ++k) {
      const int32_t id = order[k];
      allowed[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
  };
  depth_sets_.assign(static_cast<size_t>(trie.max_depth()) + 1, -1);
  depth_sets_[0] = state_;
  const int32_t n = static_cast<int32_t>(nodes.size());
  for (int32_t i = 1; i < n;) {
    const TokenTrie::Node& node = nodes[i];
    const int32_t set = Step(depth_sets_[node.depth - 1], node.byte);
    if (set < 0) {
      i = node.end;
      continue;
    }
    mark(node.own_begin, node.own_end);
    if (node.end == i + 1) {
      ++i;
      continue;
    }
    // A state that accepts every run of the subtree's bytes accepts the whole subtree.
    const TokenTrie::Subtree& below = subtrees[i];
    if (below.bytes.SubsetOf(first_bytes_[set]) && below.bytes.SubsetOf(Run(set, below.height))) {
      mark(node.own_end, below.tokens_end);
      i = node.end;
      continue;
    }
    depth_sets_[node.depth] = set;
    ++i;
  }
  if (static_cast<int>(masks_.size()) >= limits_.cached_masks && !masks_.empty()) {
    masks_.erase(masks_.begin());
  }
  if (limits_.cached_masks > 0) {
    masks_.push_back({state_, std::vector<uint64_t>(allowed.begin(), allowed.end())});
  }
}

}  // namespace textgen::model
