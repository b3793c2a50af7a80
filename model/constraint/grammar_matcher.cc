#include "model/constraint/grammar_matcher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "model/constraint/char_class.h"

namespace textgen::model {
namespace {

// The bytes that begin a multi-byte UTF-8 character.
const ByteSet& LeadBytes() {
  static const ByteSet kLeads = ByteSet::Range(0xC2, 0xF4);
  return kLeads;
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, MatcherLimits limits)
    : grammar_(std::move(grammar)), limits_(limits), byte_classes_(grammar_->byte_class_count()) {
  for (int c = 0; c < byte_classes_; ++c) {
    const ByteSet& bytes = grammar_->class_bytes(c);
    int b = 0;
    while (!bytes.Has(static_cast<uint8_t>(b))) ++b;
    class_byte_.push_back(static_cast<uint8_t>(b));
    ByteSet plain = bytes;
    plain &= TokenTrie::PlainAsciiBytes();
    if (!plain.Empty()) plain_classes_.push_back(c);
    all_classes_.push_back(c);
  }
  // The byte classes of each range of each multi-byte UTF-8 shape.
  for (const Utf8Shape& shape : MultibyteUtf8Shapes()) {
    std::vector<std::vector<int>>& ranges = shape_classes_.emplace_back();
    for (const auto& [lo, hi] : shape) {
      std::vector<int>& classes = ranges.emplace_back();
      for (int b = lo; b <= hi; ++b) {
        const int c = grammar_->byte_class(static_cast<uint8_t>(b));
        if (std::find(classes.begin(), classes.end(), c) == classes.end()) classes.push_back(c);
      }
    }
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
    std::vector<int32_t>& next = step_scratch_;
    next.clear();
    // Expand grows nodes_, never sets_ (InternSet below does).
    const std::vector<int32_t>& stacks = sets_[set];
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

void GrammarMatcher::StepAllClasses(int32_t set) { StepClasses(set, all_classes_); }

void GrammarMatcher::StepClasses(int32_t set, const std::vector<int>& classes) {
  // The state a byte leads to depends only on which of the set's stacks accept it, so classes
  // that the same stacks accept share one step (inside a string most classes do).
  if (sets_[set].size() > 64) return;  // StepClass, class by class
  std::vector<uint64_t> signatures(classes.size(), 0);
  {
    const std::vector<int32_t>& stacks = sets_[set];  // before any step grows sets_
    for (size_t i = 0; i < classes.size(); ++i) {
      for (size_t k = 0; k < stacks.size(); ++k) {
        const int32_t node = stacks[k];
        if (node != kAccept && grammar_->byte_set(grammar_->at(nodes_[node].position).index)
                                   .Has(class_byte_[classes[i]])) {
          signatures[i] |= uint64_t{1} << k;
        }
      }
    }
  }
  std::vector<std::pair<uint64_t, int32_t>> by_signature;
  const size_t row = static_cast<size_t>(set) * static_cast<size_t>(byte_classes_);
  for (size_t i = 0; i < classes.size(); ++i) {
    const int c = classes[i];
    const uint64_t signature = signatures[i];
    auto it = std::find_if(by_signature.begin(), by_signature.end(),
                           [&](const auto& entry) { return entry.first == signature; });
    if (it == by_signature.end()) {
      by_signature.emplace_back(signature, StepClass(set, c));  // may grow sets_
    } else if (transitions_[row + static_cast<size_t>(c)] == kUnknown) {
      transitions_[row + static_cast<size_t>(c)] = it->second;
    }
  }
}

void GrammarMatcher::ComputeUniform(int32_t set) {
  StepAllClasses(set);
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

bool GrammarMatcher::MultibyteLeadsTo(int32_t set, int32_t to) {
  if (uniform_[set].multibyte_checked_to == to) return uniform_[set].multibyte_leads;
  const bool leads = MultibyteLeadsToUncached(set, to);  // may grow uniform_
  uniform_[set].multibyte_checked_to = to;
  uniform_[set].multibyte_leads = leads;
  return leads;
}

bool GrammarMatcher::MultibyteLeadsToUncached(int32_t set, int32_t to) {
  // Depth first over each shape's ranges, one step per class present in a range; shapes
  // converge (after a lead byte a state says only how many bytes are left), so each
  // (state, shape, byte) is followed once.
  struct Frame {
    int32_t state;
    uint16_t shape;
    uint16_t at;
    bool operator==(const Frame&) const = default;
  };
  std::vector<Frame> work, seen;
  for (size_t shape = 0; shape < shape_classes_.size(); ++shape) {
    work.push_back({set, static_cast<uint16_t>(shape), 0});
  }
  while (!work.empty()) {
    const Frame f = work.back();
    work.pop_back();
    const std::vector<std::vector<int>>& ranges = shape_classes_[f.shape];
    if (f.at == ranges.size()) {
      if (f.state != to) return false;
      continue;
    }
    if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
    seen.push_back(f);
    for (int byte_class : ranges[f.at]) {
      const int32_t next = StepClass(f.state, byte_class);
      if (next < 0) return false;
      work.push_back({next, f.shape, static_cast<uint16_t>(f.at + 1)});
    }
  }
  return true;
}

bool GrammarMatcher::FirstCharFits(int32_t set, const ByteSet& ascii, bool has_multibyte) const {
  // Every character below must be able to come first: a cheap test that spares building the
  // chain of a state (a literal's, say) that takes no subtree by characters.
  return ascii.SubsetOf(first_bytes_[set]) &&
         (!has_multibyte || LeadBytes().SubsetOf(first_bytes_[set]));
}

const GrammarMatcher::CharChain& GrammarMatcher::Chain(int32_t set, int length) {
  if (!uniform_[set].chain_started) {
    CharChain& chain = uniform_[set].chain;
    chain.ascii.push_back(ByteSet::Range(0, 0x7F));
    chain.multibyte.push_back(1);
    chain.state.push_back(set);
    uniform_[set].chain_started = true;
  }
  // Extended only as far as asked: each new entry may create states.
  length = std::min(length, kMaxRun);
  while (!uniform_[set].chain.ended &&
         static_cast<int>(uniform_[set].chain.state.size()) <= length) {
    const int32_t from = uniform_[set].chain.state.back();
    if (!uniform_[from].known) ComputeUniform(from);
    const int32_t to = uniform_[from].successor;
    const bool leads = to >= 0 && MultibyteLeadsTo(from, to);  // may grow uniform_
    CharChain& chain = uniform_[set].chain;  // the steps above may have grown uniform_
    ByteSet ascii;
    bool multibyte = false;
    if (to >= 0) {
      ascii = uniform_[from].bytes;
      ascii &= chain.ascii.back();
      multibyte = chain.multibyte.back() && leads;
    }
    if (ascii.Empty() && !multibyte) {
      chain.ended = true;
      break;
    }
    chain.ascii.push_back(ascii);
    chain.multibyte.push_back(multibyte ? 1 : 0);
    chain.state.push_back(to);
    if (to == set && chain.state.size() == 2) {
      chain.loops = true;
      chain.ended = true;
    }
  }
  return uniform_[set].chain;
}

const GrammarMatcher::PlainRuns& GrammarMatcher::Plain(int32_t set, int multibyte_chars) {
  if (uniform_[set].plain.known && uniform_[set].plain.multibyte_chars == multibyte_chars) {
    return uniform_[set].plain;
  }
  // Follow plain ASCII characters while each leads to one state: a bounded string's chain of
  // states, or a loop.
  std::vector<int32_t>& chain = plain_chain_;  // chain[j]: the state after j characters
  chain.assign(1, set);
  bool loops = false;
  while (static_cast<int>(chain.size()) <= TokenTrie::kMaxPlainChars) {
    const int32_t at = chain.back();
    const size_t row = static_cast<size_t>(at) * static_cast<size_t>(byte_classes_);
    if (std::any_of(plain_classes_.begin(), plain_classes_.end(), [&](int c) {
          return transitions_[row + static_cast<size_t>(c)] == kUnknown;
        })) {
      StepClasses(at, plain_classes_);  // one step per stack signature
    }
    int32_t next = -1;
    for (int c : plain_classes_) {
      const int32_t to = transitions_[row + static_cast<size_t>(c)];
      if (to < 0 || (next >= 0 && to != next)) {
        next = -1;
        break;
      }
      next = to;
    }
    if (next < 0) break;
    if (next == at) {
      loops = true;
      break;
    }
    chain.push_back(next);
  }
  const int taken = static_cast<int>(chain.size()) - 1;
  const auto takes_none_after = [&](const ByteSet& bytes) {
    ByteSet after = first_bytes_[chain.back()];
    after &= bytes;
    return after.Empty();
  };
  // Exact only where no such character can follow the run (a longer token is then refused);
  // otherwise the walk judges the slice's tokens too.
  PlainRuns runs;
  runs.known = true;
  runs.multibyte_chars = multibyte_chars;
  if (loops || taken == TokenTrie::kMaxPlainChars) {
    runs.ascii = TokenTrie::kMaxPlainChars;
  } else if (taken > 0 && takes_none_after(TokenTrie::PlainAsciiBytes())) {
    runs.ascii = taken;
  }
  // Multi-byte characters must follow the same chain, as far as the slice's longest token.
  if (runs.ascii > 0 && multibyte_chars > 0) {
    const int checked = loops ? taken + 1 : std::min(taken, multibyte_chars);
    bool follow = true;
    for (int j = 0; j < checked && follow; ++j) {
      const int32_t to = j + 1 < static_cast<int>(chain.size()) ? chain[j + 1] : chain.back();
      follow = MultibyteLeadsTo(chain[j], to);  // may add states; `chain` is ours alone
    }
    if (follow && (loops || taken >= multibyte_chars)) {
      runs.multibyte = multibyte_chars;
    } else if (follow && takes_none_after(LeadBytes())) {
      runs.multibyte = taken;
    }
  }
  uniform_[set].plain = runs;  // the steps above may have grown uniform_
  return uniform_[set].plain;
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
  const TokenTrie* walked = &trie;
  if (trie.rest() != nullptr) {
    const PlainRuns runs = Plain(state_, trie.max_plain_multibyte_chars());
    const auto add = [&](std::span<const uint64_t> slice) {
      for (size_t w = 0; w < allowed.size(); ++w) allowed[w] |= slice[w];
    };
    if (runs.ascii > 0) {
      add(trie.plain_ascii_up_to(runs.ascii));
      walked = trie.rest_with_multibyte();
      if (runs.multibyte > 0) {
        add(trie.plain_multibyte_up_to(runs.multibyte));
        walked = trie.rest();
      }
    }
  }
  Walk(*walked, allowed);
  if (static_cast<int>(masks_.size()) >= limits_.cached_masks && !masks_.empty()) {
    masks_.erase(masks_.begin());
  }
  if (limits_.cached_masks > 0) {
    masks_.push_back({state_, std::vector<uint64_t>(allowed.begin(), allowed.end())});
  }
}

void GrammarMatcher::Walk(const TokenTrie& trie, std::span<uint64_t> allowed) {
  const std::vector<TokenTrie::Node>& nodes = trie.nodes();
  const std::vector<ByteSet>& subtree_bytes = trie.subtree_bytes();
  const std::vector<int32_t>& order = trie.order();
  const auto mark = [&](int32_t begin, int32_t end) {
    for (int32_t k = begin; k < end; ++k) {
      const int32_t id = order[k];
      allowed[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
  };
  const Grammar& grammar = *grammar_;
  depth_sets_.assign(static_cast<size_t>(trie.max_depth()) + 1, -1);
  depth_sets_[0] = state_;
  const int32_t n = static_cast<int32_t>(nodes.size()) - 1;  // the sentinel is not walked
  for (int32_t i = 1; i < n;) {
    const TokenTrie::Node& node = nodes[i];
    // Step inline: the transition is nearly always memoized already.
    const int32_t from = depth_sets_[node.depth - 1];
    const int byte_class = grammar.byte_class(node.byte);
    int32_t set = transitions_[static_cast<size_t>(from) * static_cast<size_t>(byte_classes_) +
                               static_cast<size_t>(byte_class)];
    if (set == kUnknown) set = StepClass(from, byte_class);
    if (set < 0) {
      i = node.end;
      continue;
    }
    const int32_t next_begin = nodes[i + 1].own_begin;
    mark(node.own_begin, next_begin);
    if (node.end == i + 1) {
      ++i;
      continue;
    }
    // A state that accepts every run of the subtree's bytes accepts the whole subtree.
    const ByteSet& below = subtree_bytes[i];
    bool whole = below.SubsetOf(first_bytes_[set]) && below.SubsetOf(Run(set, node.height));
    const bool has_multibyte = (below.words[2] | below.words[3]) != 0;
    ByteSet ascii = below;
    ascii.words[2] = ascii.words[3] = 0;
    if (!whole && (node.flags & TokenTrie::kWholeCharsBelow) &&
        FirstCharFits(set, ascii, has_multibyte)) {
      // By characters: the longest prefix length c every token below may take, then either
      // all of the subtree (its tokens are at most c characters long) or its tokens of at most
      // c characters, when no longer one can go on from where c characters lead.
      const CharChain& chain = Chain(set, node.chars);
      const auto fits = [&](size_t j) {
        return ascii.SubsetOf(chain.ascii[j]) && (!has_multibyte || chain.multibyte[j]);
      };
      const int want = node.chars;
      int c = 0;
      if (chain.loops) {
        c = fits(1) ? want : 0;
      } else {
        int lo = 0;  // fits(lo); the entries only shrink with j
        int hi = std::min(want, static_cast<int>(chain.state.size()) - 1);
        while (lo < hi) {
          const int mid = (lo + hi + 1) / 2;
          if (fits(static_cast<size_t>(mid))) {
            lo = mid;
          } else {
            hi = mid - 1;
          }
        }
        c = lo;
      }
      if (c >= want) {
        whole = true;
      } else if (c > 0) {
        ByteSet next = below;
        next &= first_bytes_[chain.state[static_cast<size_t>(c)]];
        if (next.Empty()) {
          const std::vector<uint16_t>& token_chars = trie.order_chars();
          const int limit = trie.path_chars()[static_cast<size_t>(i)] + c;
          const int32_t tokens_end = nodes[node.end].own_begin;
          for (int32_t k = next_begin; k < tokens_end; ++k) {
            if (token_chars[k] <= limit) {
              const int32_t id = order[k];
              allowed[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
            }
          }
          i = node.end;
          continue;
        }
      }
    }
    if (whole) {
      mark(next_begin, nodes[node.end].own_begin);
      i = node.end;
      continue;
    }
    depth_sets_[node.depth] = set;
    ++i;
  }
}

}  // namespace textgen::model
