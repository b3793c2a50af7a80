#include "model/constraint/json_schema_compiler.h"

namespace textgen::model::json_schema_internal {
namespace {

// Digit sequences (byte sets per digit, no leading zeros) covering exactly [a, b].
void SameLengthRanges(const std::string& a, const std::string& b, std::vector<ByteSet>& prefix,
                      std::vector<std::vector<ByteSet>>& out) {
  if (a.empty()) {
    out.push_back(prefix);
    return;
  }
  const auto all_digits = [](const std::string& s, char d) {
    return s.find_first_not_of(d) == std::string::npos;
  };
  const std::string a_rest = a.substr(1), b_rest = b.substr(1);
  if (a[0] == b[0]) {
    prefix.push_back(ByteSet::Single(static_cast<uint8_t>(a[0])));
    SameLengthRanges(a_rest, b_rest, prefix, out);
    prefix.pop_back();
    return;
  }
  const size_t n = a_rest.size();
  const std::string zeros(n, '0'), nines(n, '9');
  char lo = a[0], hi = b[0];
  if (!all_digits(a_rest, '0')) {
    prefix.push_back(ByteSet::Single(static_cast<uint8_t>(lo)));
    SameLengthRanges(a_rest, nines, prefix, out);
    prefix.pop_back();
    ++lo;
  }
  const bool upper_whole = all_digits(b_rest, '9');
  const char mid_hi = upper_whole ? hi : static_cast<char>(hi - 1);
  if (lo <= mid_hi) {
    std::vector<ByteSet> seq = prefix;
    seq.push_back(ByteSet::Range(static_cast<uint8_t>(lo), static_cast<uint8_t>(mid_hi)));
    for (size_t i = 0; i < n; ++i) seq.push_back(ByteSet::Range('0', '9'));
    out.push_back(std::move(seq));
  }
  if (!upper_whole) {
    prefix.push_back(ByteSet::Single(static_cast<uint8_t>(hi)));
    SameLengthRanges(zeros, b_rest, prefix, out);
    prefix.pop_back();
  }
}

std::vector<std::vector<ByteSet>> DigitRanges(uint64_t a, uint64_t b) {
  std::vector<std::vector<ByteSet>> out;
  std::vector<ByteSet> prefix;
  while (a <= b) {
    const std::string sa = std::to_string(a);
    // The largest number with as many digits as a.
    uint64_t top = 9;
    for (size_t i = 1; i < sa.size(); ++i) top = top * 10 + 9;
    const uint64_t end = std::min(b, top);
    SameLengthRanges(sa, std::to_string(end), prefix, out);
    if (end == b || end == UINT64_MAX) break;
    a = end + 1;
  }
  return out;
}

}  // namespace

absl::StatusOr<int> SchemaCompiler::LengthBound(const Json& s, const char* key,
                                                const std::string& pointer, int fallback,
                                                std::set<std::string>& used) {
  used.insert(key);
  if (!s.contains(key)) return fallback;
  const Json& v = s[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0) {
    return Refuse(absl::StrCat(pointer, "/", key), "must be a non-negative integer");
  }
  if (v.get<int64_t>() > limits_.max_length_bound) {
    return Refuse(
        absl::StrCat(pointer, "/", key),
        absl::StrCat(v.get<int64_t>(), " is over the limit of ", limits_.max_length_bound));
  }
  return static_cast<int>(v.get<int64_t>());
}

absl::StatusOr<std::pair<int, int>> SchemaCompiler::LengthBounds(const Json& s,
                                                                 const std::string& pointer,
                                                                 std::set<std::string>& used) {
  absl::StatusOr<int> min = LengthBound(s, "minLength", pointer, 0, used);
  if (!min.ok()) return min.status();
  absl::StatusOr<int> max = LengthBound(s, "maxLength", pointer, -1, used);
  if (!max.ok()) return max.status();
  if (*max >= 0 && *max < *min) {
    return Refuse(pointer + "/maxLength", "is smaller than minLength: no string matches");
  }
  return std::pair{*min, *max};
}

absl::StatusOr<int> SchemaCompiler::StringRule(const Json& s, const std::string& pointer,
                                               std::set<std::string>& used) {
  absl::StatusOr<std::pair<int, int>> bounds = LengthBounds(s, pointer, used);
  if (!bounds.ok()) return bounds.status();
  const auto [min, max] = *bounds;
  used.insert("pattern");
  used.insert("format");
  const bool pattern = s.contains("pattern"), format = s.contains("format");
  if ((pattern || format) && (min > 0 || max >= 0)) {
    return Unsupported(pointer, pattern ? "pattern" : "format", " together with a length bound");
  }
  if (pattern && format) return Unsupported(pointer, "format", " together with pattern");
  int body = -1;
  if (pattern) {
    if (!s["pattern"].is_string()) return Refuse(pointer + "/pattern", "must be a string");
    absl::StatusOr<CompiledRegex> regex =
        CompileRegex(b_, s["pattern"].get<std::string>(), TextContext::kJsonString);
    if (!regex.ok()) {
      return Refuse(pointer + "/pattern", regex.status().message());
    }
    // JSON Schema patterns are not anchored: they may match anywhere in the string.
    Sequence seq;
    if (!regex->anchored_start) seq.push_back(GrammarBuilder::Ref(StringChars(0, -1)));
    seq.push_back(GrammarBuilder::Ref(regex->rule));
    if (!regex->anchored_end) seq.push_back(GrammarBuilder::Ref(StringChars(0, -1)));
    body = b_.RuleOf("pattern", {seq});
  } else if (format) {
    if (!s["format"].is_string()) return Refuse(pointer + "/format", "must be a string");
    absl::StatusOr<int> f = Format(s["format"].get<std::string>(), pointer);
    if (!f.ok()) return f.status();
    body = *f;
  } else {
    body = StringChars(min, max);
  }
  Sequence string = Lit("\"");
  string.push_back(GrammarBuilder::Ref(body));
  string.push_back(b_.Bytes(ByteSet::Single('"')));
  return b_.RuleOf("string", {string});
}

absl::StatusOr<int> SchemaCompiler::Format(const std::string& name, const std::string& pointer) {
  static constexpr char kDate[] =
      "(\\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|(0[469]|11)-(0[1-9]|[12]\\d|30)|"
      "02-(0[1-9]|1\\d|2[0-8]))|(\\d\\d(0[48]|[2468][048]|[13579][26])|"
      "([02468][048]|[13579][26])00)-02-29)";
  static constexpr char kTime[] =
      "([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,9})?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)";
  std::string regex;
  if (name == "date") {
    regex = kDate;
  } else if (name == "time") {
    regex = kTime;
  } else if (name == "date-time") {
    regex = absl::StrCat(kDate, "T", kTime);
  } else if (name == "uuid") {
    regex = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
  } else if (name == "email") {
    regex =
        "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
        "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}"
        "[A-Za-z0-9])?)+";
  } else {
    return Refuse(pointer + "/format",
                  absl::StrCat("format \"", name,
                               "\" is not supported (date, time, date-time, uuid, email)"));
  }
  absl::StatusOr<CompiledRegex> compiled = CompileRegex(b_, regex, TextContext::kJsonString);
  if (!compiled.ok()) return compiled.status();
  return compiled->rule;
}

// An integer bound: whole numbers only.
absl::Status SchemaCompiler::Bound(const Json& s, const char* key, const std::string& pointer,
                                   std::optional<int64_t>& out, std::set<std::string>& used) {
  used.insert(key);
  if (!s.contains(key)) return absl::OkStatus();
  const Json& v = s[key];
  if (v.is_boolean()) {
    return Refuse(absl::StrCat(pointer, "/", key),
                  "the draft-4 boolean form is not supported; give the bound as a number");
  }
  if (!v.is_number()) return Refuse(absl::StrCat(pointer, "/", key), "must be a number");
  const double d = v.get<double>();
  if (d != std::floor(d) || std::fabs(d) > 9.0e18) {
    return Refuse(absl::StrCat(pointer, "/", key),
                  absl::StrCat(v.dump(), ": only whole-number bounds are supported"));
  }
  out = static_cast<int64_t>(d);
  return absl::OkStatus();
}

absl::StatusOr<int> SchemaCompiler::NumberSchema(const Json& s, const std::string& pointer,
                                                 const std::string& type,
                                                 std::set<std::string>& used) {
  std::optional<int64_t> minimum, maximum, exclusive_min, exclusive_max;
  for (auto [key, slot] : {std::pair{"minimum", &minimum}, std::pair{"maximum", &maximum},
                           std::pair{"exclusiveMinimum", &exclusive_min},
                           std::pair{"exclusiveMaximum", &exclusive_max}}) {
    absl::Status st = Bound(s, key, pointer, *slot, used);
    if (!st.ok()) return st;
  }
  const bool integer = type == "integer";
  if (!minimum && !maximum && !exclusive_min && !exclusive_max) {
    if (!integer) return AnyNumber();
    if (any_integer_ < 0) any_integer_ = NumberRule(true);
    return any_integer_;
  }
  // The allowed whole numbers [lo, hi]; for numbers, fractions between them too.
  const int64_t limit = static_cast<int64_t>(kLargestInteger / 10);
  int64_t lo = -limit, hi = limit;
  if (minimum) lo = std::max(lo, *minimum);
  if (exclusive_min) lo = std::max(lo, *exclusive_min + (integer ? 1 : 0));
  if (maximum) hi = std::min(hi, *maximum);
  if (exclusive_max) hi = std::min(hi, *exclusive_max - (integer ? 1 : 0));
  if (lo > hi) return Refuse(pointer, "no number satisfies its bounds");
  if (integer) return WholeNumber(IntegerRange(lo, hi));
  // Numbers: w.f with w in [lo, hi - 1] and any fraction (negative side mirrored), or a
  // bound itself; exclusive bounds drop the bound and keep fractions just inside it.
  // A fraction that is not zero (no trailing zeros), so w.f lies strictly between w and w+1.
  const Symbol digit = b_.Bytes(ByteSet::Range('0', '9'));
  const int fraction = b_.RuleOf(
      "fraction", {{GrammarBuilder::Ref(b_.Repeat("digits", {digit}, 0, kMaxFractionDigits - 1)),
                    b_.Bytes(ByteSet::Range('1', '9'))}});
  std::vector<Sequence> alternatives;
  const bool lo_open = exclusive_min && (!minimum || *exclusive_min >= *minimum);
  const bool hi_open = exclusive_max && (!maximum || *exclusive_max <= *maximum);
  const int64_t whole_lo = lo_open ? lo + 1 : lo;
  const int64_t whole_hi = hi_open ? hi - 1 : hi;
  if (whole_lo <= whole_hi) {
    alternatives.push_back({GrammarBuilder::Ref(WholeNumber(IntegerRange(whole_lo, whole_hi)))});
  }
  // Fractions: between consecutive whole numbers w and w+1 inside [lo, hi].
  // Non-negative part: integer part in [max(lo, 0), hi - 1] then ".f".
  const int64_t pos_lo = std::max<int64_t>(lo, 0), pos_hi = hi - 1;
  if (pos_lo <= pos_hi) {
    alternatives.push_back({GrammarBuilder::Ref(IntegerRange(pos_lo, pos_hi)),
                            b_.Bytes(ByteSet::Single('.')), GrammarBuilder::Ref(fraction)});
  }
  // Negative part: -(w.f) with w in [max(-hi, 0), -lo - 1]; "-0.f" when lo < 0 < hi + 1.
  const int64_t neg_lo = std::max<int64_t>(-hi, 0), neg_hi = -lo - 1;
  if (neg_lo <= neg_hi) {
    Sequence neg = Lit("-");
    neg.insert(neg.end(), {GrammarBuilder::Ref(IntegerRange(neg_lo, neg_hi)),
                           b_.Bytes(ByteSet::Single('.')), GrammarBuilder::Ref(fraction)});
    alternatives.push_back(neg);
  }
  if (alternatives.empty()) return Refuse(pointer, "no number satisfies its bounds");
  return b_.RuleOf("bounded-number", std::move(alternatives));
}

// `digits` optionally followed by ".0" (up to three zeros): 3.0 is the number 3.
int SchemaCompiler::WholeNumber(int digits) {
  Sequence zero_fraction = Lit(".");
  zero_fraction.push_back(GrammarBuilder::Ref(b_.Repeat("zeros", Lit("0"), 1, 3)));
  return b_.RuleOf("whole", {{GrammarBuilder::Ref(digits),
                              GrammarBuilder::Ref(b_.Optional("zero-fraction", zero_fraction))}});
}

// Whole numbers in [lo, hi], canonical spelling.
int SchemaCompiler::IntegerRange(int64_t lo, int64_t hi) {
  std::vector<Sequence> alternatives;
  const auto add = [&](uint64_t a, uint64_t b, bool negative) {
    for (const std::vector<ByteSet>& digits : DigitRanges(a, b)) {
      Sequence seq;
      if (negative) seq.push_back(b_.Bytes(ByteSet::Single('-')));
      for (const ByteSet& d : digits) seq.push_back(b_.Bytes(d));
      alternatives.push_back(std::move(seq));
    }
  };
  if (lo < 0)
    add(static_cast<uint64_t>(std::max<int64_t>(-hi, 1)), static_cast<uint64_t>(-lo), true);
  if (hi >= 0)
    add(static_cast<uint64_t>(std::max<int64_t>(lo, 0)), static_cast<uint64_t>(hi), false);
  return b_.RuleOf("range", std::move(alternatives));
}

}  // namespace textgen::model::json_schema_internal
