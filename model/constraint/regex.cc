#include "model/constraint/regex.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace textgen::model {
namespace {

CodepointSet Digits() {
  CodepointSet s;
  s.Add('0', '9');
  return s;
}
CodepointSet Word() {
  CodepointSet s;
  s.Add('a', 'z');
  s.Add('A', 'Z');
  s.Add('0', '9');
  s.Add('_');
  return s;
}
CodepointSet Space() {
  CodepointSet s;
  for (uint32_t cp : {0x20u, 0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0xA0u, 0x1680u, 0x2028u, 0x2029u,
                      0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) {
    s.Add(cp);
  }
  s.Add(0x2000, 0x200A);
  return s;
}

class RegexParser {
 public:
  RegexParser(GrammarBuilder& builder, std::string_view text, TextContext context,
              const RegexLimits& limits)
      : b_(builder), text_(text), context_(context), limits_(limits) {}

  absl::StatusOr<CompiledRegex> Parse() {
    if (text_.size() > limits_.max_length) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the regex is ", text_.size(), " bytes, over the limit of ", limits_.max_length));
    }
    CompiledRegex out{};
    if (Peek('^')) {
      ++pos_;
      out.anchored_start = true;
    }
    absl::StatusOr<int> rule = Alternation();
    if (!rule.ok()) return rule.status();
    if (pos_ < text_.size()) {
      if (text_[pos_] == ')') return Error("unmatched ')'");
      return Error("unexpected character");
    }
    out.rule = *rule;
    out.anchored_end = anchored_end_;
    return out;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("regex: ", what, " at offset ", pos_));
  }
  bool Peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool AtEnd() const { return pos_ >= text_.size(); }

  // One UTF-8 character of the pattern.
  absl::StatusOr<uint32_t> NextCodepoint() {
    std::optional<uint32_t> cp = DecodeUtf8(text_, pos_);
    if (!cp) return Error("invalid UTF-8");
    return *cp;
  }

  absl::StatusOr<uint32_t> Hex(int digits) {
    std::optional<uint32_t> v = DecodeHex(text_, pos_, digits);
    if (!v) return Error(absl::StrCat("expected ", digits, " hex digits"));
    return *v;
  }

  // After a backslash: a class escape into `set`, or a literal character.
  absl::Status Escape(CodepointSet& set, bool in_class) {
    if (AtEnd()) return Error("trailing backslash");
    const char c = text_[pos_++];
    switch (c) {
      case 'd':
        set.AddSet(Digits());
        return absl::OkStatus();
      case 'D':
        set.AddSet(Digits().Complement());
        return absl::OkStatus();
      case 'w':
        set.AddSet(Word());
        return absl::OkStatus();
      case 'W':
        set.AddSet(Word().Complement());
        return absl::OkStatus();
      case 's':
        set.AddSet(Space());
        return absl::OkStatus();
      case 'S':
        set.AddSet(Space().Complement());
        return absl::OkStatus();
      case 'n':
        set.Add('\n');
        return absl::OkStatus();
      case 't':
        set.Add('\t');
        return absl::OkStatus();
      case 'r':
        set.Add('\r');
        return absl::OkStatus();
      case 'f':
        set.Add('\f');
        return absl::OkStatus();
      case 'v':
        set.Add('\v');
        return absl::OkStatus();
      case '0':
        set.Add(0);
        return absl::OkStatus();
      case 'x': {
        absl::StatusOr<uint32_t> v = Hex(2);
        if (!v.ok()) return v.status();
        set.Add(*v);
        return absl::OkStatus();
      }
      case 'u': {
        absl::StatusOr<uint32_t> v = Hex(4);
        if (!v.ok()) return v.status();
        set.Add(*v);
        return absl::OkStatus();
      }
      case 'b':
        if (in_class) {
          set.Add('\b');
          return absl::OkStatus();
        }
        --pos_;
        return Error("word boundaries (\\b) are not supported");
      default:
        break;
    }
    if ((c >= '1' && c <= '9') || c == 'k') {
      --pos_;
      return Error("backreferences are not supported");
    }
    if (isalnum(static_cast<unsigned char>(c))) {
      --pos_;
      return Error(absl::StrCat("unknown escape \\", std::string(1, c)));
    }
    --pos_;
    absl::StatusOr<uint32_t> cp = NextCodepoint();
    if (!cp.ok()) return cp.status();
    set.Add(*cp);
    return absl::OkStatus();
  }

  absl::StatusOr<CodepointSet> Class() {
    ++pos_;  // '['
    const bool negated = Peek('^');
    if (negated) ++pos_;
    CodepointSet set;
    bool first = true;
    while (true) {
      if (AtEnd()) return Error("unterminated character class");
      if (Peek(']') && !first) {
        ++pos_;
        break;
      }
      first = false;
      CodepointSet item;
      uint32_t lo = 0;
      bool single = false;
      if (Peek('\\')) {
        ++pos_;
        const size_t before = pos_;
        if (absl::Status s = Escape(item, /*in_class=*/true); !s.ok()) return s;
        // A one-character escape may start a range.
        single = item.ranges().size() == 1 && item.ranges()[0].first == item.ranges()[0].second &&
                 !(pos_ == before + 1 &&
                   std::string_view("dDwWsS").find(text_[before]) != std::string_view::npos);
        if (single) lo = item.ranges()[0].first;
      } else {
        absl::StatusOr<uint32_t> cp = NextCodepoint();
        if (!cp.ok()) return cp.status();
        lo = *cp;
        single = true;
        item.Add(lo);
      }
      if (single && Peek('-') && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t hi = 0;
        if (Peek('\\')) {
          ++pos_;
          CodepointSet end;
          if (absl::Status s = Escape(end, true); !s.ok()) return s;
          if (end.ranges().size() != 1 || end.ranges()[0].first != end.ranges()[0].second) {
            return Error("a range must end in a single character");
          }
          hi = end.ranges()[0].first;
        } else {
          absl::StatusOr<uint32_t> cp = NextCodepoint();
          if (!cp.ok()) return cp.status();
          hi = *cp;
        }
        if (hi < lo) return Error("range out of order");
        item.Add(lo, hi);
      }
      set.AddSet(item);
    }
    return negated ? set.Complement() : set;
  }

  // One atom as a sequence of symbols.
  absl::StatusOr<Sequence> Atom() {
    const char c = text_[pos_];
    CodepointSet set;
    switch (c) {
      case '(': {
        ++pos_;
        if (Peek('?')) {
          if (pos_ + 1 < text_.size() && text_[pos_ + 1] == ':') {
            pos_ += 2;
          } else {
            return Error("lookaround and named groups are not supported");
          }
        }
        if (++depth_ > 256) return Error("groups nest too deeply");
        absl::StatusOr<int> inner = Alternation();
        --depth_;
        if (!inner.ok()) return inner.status();
        if (!Peek(')')) return Error("missing ')'");
        ++pos_;
        return Sequence{GrammarBuilder::Ref(*inner)};
      }
      case '[': {
        absl::StatusOr<CodepointSet> cls = Class();
        if (!cls.ok()) return cls.status();
        return Sequence{CharSymbol(b_, *cls, context_)};
      }
      case '.':
        ++pos_;
        set.Add('\n');
        return Sequence{CharSymbol(b_, set.Complement(), context_)};
      case '\\': {
        ++pos_;
        if (absl::Status s = Escape(set, false); !s.ok()) return s;
        return Sequence{CharSymbol(b_, set, context_)};
      }
      case '*':
      case '+':
      case '?':
        return Error("nothing to repeat");
      case '^':
        return Error("'^' is only supported at the start");
      default: {
        absl::StatusOr<uint32_t> cp = NextCodepoint();
        if (!cp.ok()) return cp.status();
        set.Add(*cp);
        return Sequence{CharSymbol(b_, set, context_)};
      }
    }
  }

  // Parses {n}, {n,}, {n,m} after '{'; false when it is not a quantifier (a literal '{').
  absl::StatusOr<bool> Braces(int& min, int& max) {
    size_t p = pos_ + 1;
    const auto number = [&](int& out) {
      const size_t start = p;
      int64_t v = 0;
      while (p < text_.size() && isdigit(static_cast<unsigned char>(text_[p]))) {
        v = std::min<int64_t>(v * 10 + (text_[p++] - '0'), int64_t{1} << 40);
      }
      out = static_cast<int>(std::min<int64_t>(v, limits_.max_repeat + int64_t{1}));
      return p > start;
    };
    if (!number(min)) return false;
    max = min;
    if (p < text_.size() && text_[p] == ',') {
      ++p;
      if (!number(max)) max = -1;
    }
    if (p >= text_.size() || text_[p] != '}') return false;
    pos_ = p + 1;
    if (min > limits_.max_repeat || max > limits_.max_repeat) {
      return Error(absl::StrCat("repetition bound over the limit of ", limits_.max_repeat));
    }
    if (max >= 0 && max < min) return Error("repetition bounds out of order");
    return true;
  }

  absl::StatusOr<Sequence> Concatenation() {
    Sequence seq;
    while (!AtEnd() && !Peek('|') && !Peek(')')) {
      if (Peek('$')) {
        ++pos_;
        if (!AtEnd() || depth_ > 0) return Error("'$' is only supported at the end");
        anchored_end_ = true;
        break;
      }
      absl::StatusOr<Sequence> atom = Atom();
      if (!atom.ok()) return atom.status();
      int min = 1, max = 1;
      bool repeated = true;
      if (Peek('*')) {
        min = 0, max = -1, ++pos_;
      } else if (Peek('+')) {
        min = 1, max = -1, ++pos_;
      } else if (Peek('?')) {
        min = 0, max = 1, ++pos_;
      } else if (Peek('{')) {
        absl::StatusOr<bool> braces = Braces(min, max);
        if (!braces.ok()) return braces.status();
        repeated = *braces;
      } else {
        repeated = false;
      }
      if (repeated) {
        if (Peek('?')) ++pos_;  // lazy: the same language
        if (Peek('+')) return Error("possessive quantifiers are not supported");
        if (Peek('*') || Peek('?')) return Error("nothing to repeat");
        if (!(min == 1 && max == 1)) {
          seq.push_back(GrammarBuilder::Ref(b_.Repeat("regex-repeat", *atom, min, max)));
          continue;
        }
      }
      seq.insert(seq.end(), atom->begin(), atom->end());
    }
    return seq;
  }

  absl::StatusOr<int> Alternation() {
    std::vector<Sequence> alternatives;
    while (true) {
      absl::StatusOr<Sequence> seq = Concatenation();
      if (!seq.ok()) return seq.status();
      alternatives.push_back(std::move(*seq));
      if (!Peek('|')) break;
      ++pos_;
    }
    return b_.RuleOf("regex", std::move(alternatives));
  }

  GrammarBuilder& b_;
  std::string_view text_;
  TextContext context_;
  RegexLimits limits_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool anchored_end_ = false;
};

}  // namespace

absl::StatusOr<CompiledRegex> CompileRegex(GrammarBuilder& builder, std::string_view regex,
                                           TextContext context, const RegexLimits& limits) {
  return RegexParser(builder, regex, context, limits).Parse();
}

}  // namespace textgen::model
