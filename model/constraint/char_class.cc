#include "model/constraint/char_class.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_format.h"

namespace textgen::model {

void CodepointSet::Add(uint32_t lo, uint32_t hi) {
  if (lo > hi) return;
  ranges_.push_back({lo, std::min(hi, kMaxCodepoint)});
  normalized_ = false;
}

void CodepointSet::AddSet(const CodepointSet& other) {
  for (const auto& [lo, hi] : other.ranges()) Add(lo, hi);
}

const std::vector<std::pair<uint32_t, uint32_t>>& CodepointSet::ranges() const {
  if (!normalized_) {
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto& r : ranges_) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    ranges_ = std::move(merged);
    normalized_ = true;
  }
  return ranges_;
}

CodepointSet CodepointSet::Complement() const {
  CodepointSet out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : ranges()) {
    if (lo > next) out.Add(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.Add(next, kMaxCodepoint);
  return out;
}

bool CodepointSet::Contains(uint32_t cp) const {
  for (const auto& [lo, hi] : ranges()) {
    if (cp >= lo && cp <= hi) return true;
  }
  return false;
}

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::optional<uint32_t> DecodeUtf8(std::string_view text, size_t& pos) {
  if (pos >= text.size()) return std::nullopt;
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  const size_t len = lead < 0x80    ? 1
                     : lead >= 0xF8 ? 0
                     : lead >= 0xF0 ? 4
                     : lead >= 0xE0 ? 3
                     : lead >= 0xC0 ? 2
                                    : 0;
  if (len == 0 || pos + len > text.size()) return std::nullopt;
  uint32_t cp = len == 1 ? lead : lead & (0xFF >> (len + 1));
  for (size_t i = 1; i < len; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (byte(pos + i) & 0x3F);
  }
  if (cp > kMaxCodepoint) return std::nullopt;
  pos += len;
  return cp;
}

std::optional<uint32_t> DecodeHex(std::string_view text, size_t& pos, int digits) {
  uint32_t v = 0;
  for (int i = 0; i < digits; ++i) {
    const size_t at = pos + static_cast<size_t>(i);
    if (at >= text.size() || !isxdigit(static_cast<unsigned char>(text[at]))) return std::nullopt;
    const char c = text[at];
    v = v * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  if (v > kMaxCodepoint) return std::nullopt;
  pos += static_cast<size_t>(digits);
  return v;
}

namespace {

using ByteRanges = Utf8Shape;

// Splits [lo, hi] (one encoded length, no surrogates) until each piece is a product of byte
// ranges, then appends those.
void Utf8Ranges(uint32_t lo, uint32_t hi, std::vector<ByteRanges>& out) {
  for (uint32_t max : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= max && hi > max) {
      Utf8Ranges(lo, max, out);
      Utf8Ranges(max + 1, hi, out);
      return;
    }
  }
  if (hi < 0x80) {
    out.push_back({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}});
    return;
  }
  for (int i = 1; i < 4; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Utf8Ranges(lo, lo | m, out);
        Utf8Ranges((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Utf8Ranges(lo, (hi & ~m) - 1, out);
        Utf8Ranges(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  AppendUtf8(lo, a);
  AppendUtf8(hi, b);
  ByteRanges ranges;
  for (size_t i = 0; i < a.size(); ++i) {
    ranges.push_back({static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])});
  }
  out.push_back(std::move(ranges));
}

// The escape JSON writes for `cp` (a control, quote or backslash).
std::string JsonEscape(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\t':
      return "\\t";
    case '\r':
      return "\\r";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    default:
      return absl::StrFormat("\\u%04x", cp);
  }
}

// The alternatives that spell exactly `texts` (sorted, distinct), texts with a common first
// byte sharing it: a state then holds one parse stack per distinct next byte, not one per
// text (JSON's 34 escapes all begin with a backslash).
std::vector<Sequence> PrefixTree(GrammarBuilder& builder, std::vector<std::string> texts) {
  std::vector<Sequence> alternatives;
  for (size_t i = 0; i < texts.size();) {
    if (texts[i].empty()) {
      alternatives.push_back({});
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < texts.size() && !texts[end].empty() && texts[end][0] == texts[i][0]) ++end;
    Sequence sequence = {builder.Bytes(ByteSet::Single(static_cast<uint8_t>(texts[i][0])))};
    if (end - i == 1) {
      const Sequence rest = builder.Literal(std::string_view(texts[i]).substr(1));
      sequence.insert(sequence.end(), rest.begin(), rest.end());
    } else {
      std::vector<std::string> rests;
      for (size_t k = i; k < end; ++k) rests.push_back(texts[k].substr(1));
      sequence.push_back(GrammarBuilder::Ref(builder.RuleOf("escape", PrefixTree(builder, rests))));
    }
    alternatives.push_back(std::move(sequence));
    i = end;
  }
  return alternatives;
}

}  // namespace

const std::vector<Utf8Shape>& MultibyteUtf8Shapes() {
  static const std::vector<Utf8Shape>* const shapes = [] {
    auto* out = new std::vector<Utf8Shape>;
    Utf8Ranges(0x80, 0xD7FF, *out);
    Utf8Ranges(0xE000, kMaxCodepoint, *out);
    return out;
  }();
  return *shapes;
}

Symbol CharSymbol(GrammarBuilder& builder, const CodepointSet& set, TextContext context) {
  CodepointSet raw;
  std::vector<std::string> escapes;
  for (auto [lo, hi] : set.ranges()) {
    // Surrogates are not characters.
    if (lo <= 0xDFFF && hi >= 0xD800) {
      if (lo < 0xD800) raw.Add(lo, 0xD7FF);
      if (hi > 0xDFFF) raw.Add(0xE000, hi);
      continue;
    }
    raw.Add(lo, hi);
  }
  if (context == TextContext::kJsonString) {
    CodepointSet plain;
    for (auto [lo, hi] : raw.ranges()) {
      for (uint32_t cp = lo; cp <= std::min<uint32_t>(hi, 0x5C); ++cp) {
        if (cp < 0x20 || cp == '"' || cp == '\\') escapes.push_back(JsonEscape(cp));
      }
      // Everything else stays raw.
      uint32_t from = lo;
      while (from <= hi) {
        if (from < 0x20 || from == '"' || from == '\\') {
          ++from;
          continue;
        }
        uint32_t to = hi;
        if (from < '"' && to >= '"') to = '"' - 1;
        if (from < '\\' && to >= '\\') to = '\\' - 1;
        plain.Add(from, to);
        from = to + 1;
      }
    }
    raw = plain;
  }
  std::vector<ByteRanges> sequences;
  for (auto [lo, hi] : raw.ranges()) Utf8Ranges(lo, hi, sequences);
  // One byte set when every character is one byte.
  if (escapes.empty() && std::all_of(sequences.begin(), sequences.end(),
                                     [](const ByteRanges& r) { return r.size() == 1; })) {
    ByteSet bytes;
    for (const ByteRanges& r : sequences) bytes.AddRange(r[0].first, r[0].second);
    return builder.Bytes(bytes);
  }
  std::vector<Sequence> alternatives;
  ByteSet single;
  // Multi-byte characters end in runs of any continuation byte: one rule per run length,
  // shared, so that after a lead byte the state says only how many bytes are left, whatever
  // the lead (7 states per position in a string instead of 18).
  const ByteSet continuation = ByteSet::Range(0x80, 0xBF);
  std::vector<int> tails;  // tails[n - 1]: n continuation bytes
  for (const ByteRanges& r : sequences) {
    if (r.size() == 1) {
      single.AddRange(r[0].first, r[0].second);
      continue;
    }
    size_t tail_from = r.size();
    while (tail_from > 1 &&
           ByteSet::Range(r[tail_from - 1].first, r[tail_from - 1].second) == continuation) {
      --tail_from;
    }
    Sequence seq;
    for (size_t k = 0; k < tail_from; ++k) {
      seq.push_back(builder.Bytes(ByteSet::Range(r[k].first, r[k].second)));
    }
    if (const size_t tail = r.size() - tail_from; tail > 0) {
      while (tails.size() < tail) {
        // Nested, so that n bytes left is one state however the character began.
        Sequence bytes = {builder.Bytes(continuation)};
        if (!tails.empty()) bytes.push_back(GrammarBuilder::Ref(tails.back()));
        tails.push_back(builder.RuleOf("continuation", {std::move(bytes)}));
      }
      seq.push_back(GrammarBuilder::Ref(tails[tail - 1]));
    }
    alternatives.push_back(std::move(seq));
  }
  if (!single.Empty()) alternatives.insert(alternatives.begin(), {builder.Bytes(single)});
  std::sort(escapes.begin(), escapes.end());
  escapes.erase(std::unique(escapes.begin(), escapes.end()), escapes.end());
  for (Sequence& escape : PrefixTree(builder, escapes)) alternatives.push_back(std::move(escape));
  const int rule = builder.RuleOf("char", std::move(alternatives));
  if (set.Empty()) builder.AllowEmpty(rule);
  return GrammarBuilder::Ref(rule);
}

}  // namespace textgen::model
