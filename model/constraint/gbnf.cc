#include "model/constraint/gbnf.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/constraint/char_class.h"

namespace textgen::model {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GbnfLimits& limits) : text_(text), limits_(limits) {}

  absl::StatusOr<Grammar> Parse() {
    if (text_.size() > limits_.max_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the grammar is ", text_.size(), " bytes, over the limit of ", limits_.max_bytes));
    }
    SkipSpace(true);
    while (!AtEnd()) {
      const size_t name_start = pos_;
      std::string name = Name();
      if (name.empty()) return Error("expected a rule name");
      SkipSpace(false);
      if (text_.substr(pos_, 3) != "::=") return Error(absl::StrCat("expected ::= after ", name));
      pos_ += 3;
      const int rule = RuleId(name);
      if (rule < 0) return TooManyRules();
      if (defined_[rule]) {
        pos_ = name_start;
        return Error(absl::StrCat("rule ", name, " is defined twice"));
      }
      defined_[rule] = true;
      absl::Status s = Alternatives(rule, /*nested=*/false);
      if (!s.ok()) return s;
      SkipSpace(true);
    }
    auto root = ids_.find("root");
    if (root == ids_.end() || !defined_[root->second]) {
      return absl::InvalidArgumentError("the grammar has no root rule (generation starts there)");
    }
    for (const auto& [name, id] : ids_) {
      if (!defined_[id]) {
        return absl::InvalidArgumentError(absl::StrCat("rule ", name, " is used but not defined"));
      }
    }
    return builder_.Build(root->second, limits_.grammar, /*require_all_reachable=*/true);
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  bool Peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  int Line() const {
    int line = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) line += text_[i] == '\n';
    return line;
  }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("grammar line ", Line(), ": ", what));
  }
  absl::Status TooManyRules() const {
    return absl::InvalidArgumentError(
        absl::StrCat("the grammar has more than ", limits_.max_rules, " rules"));
  }

  // Skips blanks and comments; newlines too when `newlines`.
  void SkipSpace(bool newlines) {
    while (!AtEnd()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (!AtEnd() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  // Whether the text at the cursor starts a new rule (`name ::=`).
  bool AtRuleStart() const {
    size_t p = pos_;
    while (p < text_.size() && IsNameChar(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  std::string Name() {
    const size_t start = pos_;
    while (!AtEnd() && IsNameChar(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  int RuleId(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    if (builder_.rule_count() >= limits_.max_rules) return -1;
    const int id = builder_.AddRule(name);
    ids_.emplace(name, id);
    if (static_cast<int>(defined_.size()) <= id) defined_.resize(id + 1, false);
    return id;
  }

  absl::StatusOr<uint32_t> Hex(int digits) {
    std::optional<uint32_t> v = DecodeHex(text_, pos_, digits);
    if (!v) return Error(absl::StrCat("expected ", digits, " hex digits (a code point)"));
    return *v;
  }

  // One character of a literal or class (escapes decoded).
  absl::StatusOr<uint32_t> Char() {
    if (AtEnd()) return Error("unexpected end of grammar");
    const uint8_t c = static_cast<uint8_t>(text_[pos_]);
    if (c == '\\') {
      ++pos_;
      if (AtEnd()) return Error("trailing backslash");
      const char e = text_[pos_++];
      switch (e) {
        case 'n':
          return '\n';
        case 't':
          return '\t';
        case 'r':
          return '\r';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
          return static_cast<uint32_t>(e);
        case 'x':
          return Hex(2);
        case 'u':
          return Hex(4);
        case 'U':
          return Hex(8);
        default:
          --pos_;
          return Error(absl::StrCat("unknown escape \\", std::string(1, e)));
      }
    }
    std::optional<uint32_t> cp = DecodeUtf8(text_, pos_);
    if (!cp) return Error("invalid UTF-8");
    return *cp;
  }

  absl::Status Alternatives(int rule, bool nested) {
    while (true) {
      absl::StatusOr<Sequence> seq = SequenceOf(nested);
      if (!seq.ok()) return seq.status();
      builder_.AddAlternative(rule, std::move(*seq));
      SkipSpace(nested);
      if (!Peek('|')) return absl::OkStatus();
      ++pos_;
      SkipSpace(true);
    }
  }

  absl::StatusOr<Sequence> SequenceOf(bool nested) {
    Sequence seq;
    while (true) {
      SkipSpace(nested);
      if (!nested && Peek('\n')) {
        // A rule continues on the next lines until another rule begins.
        SkipSpace(true);
        if (AtEnd() || AtRuleStart()) return seq;
      }
      if (AtEnd() || Peek('|') || Peek(')')) return seq;
      Sequence atom;
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        std::string bytes;
        while (!Peek('"')) {
          if (AtEnd() || Peek('\n')) return Error("unterminated literal");
          absl::StatusOr<uint32_t> cp = Char();
          if (!cp.ok()) return cp.status();
          AppendUtf8(*cp, bytes);
        }
        ++pos_;
        atom = builder_.Literal(bytes);
        if (atom.empty()) {
          // "" matches the empty string: a rule with one empty alternative.
          atom = {GrammarBuilder::Ref(builder_.RuleOf("empty", {Sequence{}}))};
        }
      } else if (c == '[') {
        ++pos_;
        const bool negated = Peek('^');
        if (negated) ++pos_;
        CodepointSet set;
        while (!Peek(']')) {
          if (AtEnd() || Peek('\n')) return Error("unterminated character class");
          absl::StatusOr<uint32_t> lo = Char();
          if (!lo.ok()) return lo.status();
          uint32_t hi = *lo;
          if (Peek('-') && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
            ++pos_;
            absl::StatusOr<uint32_t> end = Char();
            if (!end.ok()) return end.status();
            hi = *end;
            if (hi < *lo) return Error("character range out of order");
          }
          set.Add(*lo, hi);
        }
        ++pos_;
        atom = {CharSymbol(builder_, negated ? set.Complement() : set, TextContext::kRaw)};
      } else if (c == '.') {
        ++pos_;
        CodepointSet any;
        any.Add(0, kMaxCodepoint);
        atom = {CharSymbol(builder_, any, TextContext::kRaw)};
      } else if (c == '(') {
        ++pos_;
        if (++depth_ > 256) return Error("groups nest too deeply");
        const int group = builder_.AddRule("group");
        SkipSpace(true);
        absl::Status s = Alternatives(group, /*nested=*/true);
        --depth_;
        if (!s.ok()) return s;
        SkipSpace(true);
        if (!Peek(')')) return Error("missing ')'");
        ++pos_;
        atom = {GrammarBuilder::Ref(group)};
      } else if (IsNameChar(c)) {
        std::string name = Name();
        const int id = RuleId(name);
        if (id < 0) return TooManyRules();
        atom = {GrammarBuilder::Ref(id)};
      } else {
        return Error(absl::StrCat("unexpected character '", std::string(1, c), "'"));
      }
      int min = 1, max = 1;
      if (Peek('*')) {
        min = 0, max = -1, ++pos_;
      } else if (Peek('+')) {
        min = 1, max = -1, ++pos_;
      } else if (Peek('?')) {
        min = 0, max = 1, ++pos_;
      } else if (Peek('{')) {
        absl::Status s = Braces(min, max);
        if (!s.ok()) return s;
      }
      if (min == 1 && max == 1) {
        seq.insert(seq.end(), atom.begin(), atom.end());
      } else {
        seq.push_back(GrammarBuilder::Ref(builder_.Repeat("repeat", atom, min, max)));
      }
    }
  }

  absl::Status Braces(int& min, int& max) {
    ++pos_;
    const auto number = [&](int& out) {
      SkipSpace(false);
      const size_t start = pos_;
      int64_t v = 0;
      while (!AtEnd() && isdigit(static_cast<unsigned char>(text_[pos_]))) {
        v = std::min<int64_t>(v * 10 + (text_[pos_++] - '0'), int64_t{1} << 40);
      }
      out = static_cast<int>(std::min<int64_t>(v, limits_.max_repeat + int64_t{1}));
      SkipSpace(false);
      return pos_ > start;
    };
    if (!number(min)) return Error("expected a number after {");
    max = min;
    if (Peek(',')) {
      ++pos_;
      if (!number(max)) max = -1;
    }
    if (!Peek('}')) return Error("expected }");
    ++pos_;
    if (min > limits_.max_repeat || max > limits_.max_repeat) {
      return Error(absl::StrCat("repetition bound over the limit of ", limits_.max_repeat));
    }
    if (max >= 0 && max < min) return Error("repetition bounds out of order");
    return absl::OkStatus();
  }

  std::string_view text_;
  GbnfLimits limits_;
  size_t pos_ = 0;
  int depth_ = 0;
  GrammarBuilder builder_;
  std::map<std::string, int> ids_;
  std::vector<bool> defined_;
};

}  // namespace

absl::StatusOr<Grammar> ParseGbnf(std::string_view text, const GbnfLimits& limits) {
  return GbnfParser(text, limits).Parse();
}

}  // namespace textgen::model
