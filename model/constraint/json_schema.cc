#include "model/constraint/json_schema.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/base/json_nesting.h"
#include "model/constraint/char_class.h"
#include "model/constraint/regex.h"
#include "nlohmann/json.hpp"

namespace textgen::model {
namespace {

using Json = nlohmann::json;

constexpr int kMaxIntegerDigits = 19;
constexpr int kMaxFractionDigits = 16;
constexpr int kMaxExponentDigits = 3;
// Declared property names longer than this in total fall back to "any key" for additional
// properties (a repeated declared key is then possible; documented).
constexpr size_t kMaxKeyTrieBytes = 4096;
constexpr uint64_t kLargestInteger = 9'999'999'999'999'999'999ULL;  // 19 digits

// Keywords that only describe (ignored).
const std::set<std::string>& Annotations() {
  static const std::set<std::string>* names = new std::set<std::string>{
      "$schema",     "$id",     "$comment",    "$anchor",          "title",
      "description", "default", "examples",    "deprecated",       "readOnly",
      "writeOnly",   "$defs",   "definitions", "contentMediaType", "contentEncoding"};
  return *names;
}

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

class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, const JsonSchemaLimits& limits) : root_(root), limits_(limits) {
    ByteSet indent;
    indent.Add(' ');
    indent.Add('\t');
    const int indentation = b_.Repeat("indent", {b_.Bytes(indent)}, 0, limits_.max_indent);
    const int newlines = b_.Repeat("newlines", Lit("\n"), 1, 2);
    ws_ = b_.RuleOf(
        "ws",
        {Sequence{}, Lit(" "), {GrammarBuilder::Ref(newlines), GrammarBuilder::Ref(indentation)}});
  }

  // The document: the root schema, or with before_branch each branch of its anyOf after its
  // own text.
  absl::StatusOr<int> Body(const JsonFraming& framing) {
    if (framing.before_branch.empty()) return Schema(root_, "", 0);
    const auto branches = root_.is_object() ? root_.find("anyOf") : root_.end();
    if (!root_.is_object() || branches == root_.end() || !branches->is_array() ||
        branches->size() != framing.before_branch.size()) {
      return Refuse("/anyOf", absl::StrCat("must have one branch per framed text (",
                                           framing.before_branch.size(), ")"));
    }
    std::vector<Sequence> alternatives;
    for (size_t i = 0; i < framing.before_branch.size(); ++i) {
      absl::StatusOr<int> branch = Schema((*branches)[i], absl::StrCat("/anyOf/", i), 1);
      if (!branch.ok()) return branch.status();
      Sequence alternative = Lit(framing.before_branch[i]);
      alternative.push_back(GrammarBuilder::Ref(*branch));
      alternatives.push_back(std::move(alternative));
    }
    return b_.RuleOf("branches", std::move(alternatives));
  }

  absl::StatusOr<Grammar> Compile(const JsonFraming& framing) {
    absl::StatusOr<int> rule = Body(framing);
    if (!rule.ok()) return rule.status();
    int root = *rule;
    if (framing != JsonFraming{}) {
      Sequence document = Lit(framing.before);
      document.push_back(GrammarBuilder::Ref(root));
      for (const Symbol& s : Lit(framing.after)) document.push_back(s);
      Sequence more = Lit(framing.separator);
      more.insert(more.end(), document.begin(), document.end());
      const int rest = b_.Repeat("more-documents", more, 0, std::max(framing.max_documents, 1) - 1);
      document.push_back(GrammarBuilder::Ref(rest));
      if (framing.max_sections > 0) {
        CodepointSet any;
        any.Add(0, kMaxCodepoint);
        const int text = b_.Repeat("section-text", {CharSymbol(b_, any, TextContext::kRaw)}, 0, -1);
        Sequence section = Lit(framing.section_open);
        section.push_back(GrammarBuilder::Ref(text));
        for (const Symbol& s : Lit(framing.section_close)) section.push_back(s);
        const int sections = b_.Repeat("sections", section, 0, framing.max_sections);
        document.insert(document.begin(), GrammarBuilder::Ref(sections));
      }
      if (framing.max_leading_whitespace > 0) {
        ByteSet space = ByteSet::Single(' ');
        space.Add('\n');
        const int leading =
            b_.Repeat("leading-space", {b_.Bytes(space)}, 0, framing.max_leading_whitespace);
        document.insert(document.begin(), GrammarBuilder::Ref(leading));
      }
      root = b_.RuleOf("framed", {document});
    }
    absl::StatusOr<Grammar> grammar = b_.Build(root, limits_.grammar);
    if (absl::IsInvalidArgument(grammar.status())) {
      // The builder's complaint is about a rule; the caller wrote a schema.
      return Refuse("", absl::StrCat("no JSON value satisfies the schema (",
                                     grammar.status().message(), ")"));
    }
    return grammar;
  }

  absl::StatusOr<Grammar> AnyObject() {
    return b_.Build(ObjectOf(AnyValue(), std::nullopt), limits_.grammar);
  }

 private:
  static absl::Status Refuse(const std::string& pointer, absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("schema ", pointer.empty() ? "(root)" : pointer, ": ", what));
  }
  static absl::Status Unsupported(const std::string& pointer, const std::string& keyword,
                                  absl::string_view why = "") {
    return absl::InvalidArgumentError(absl::StrCat("schema ", pointer, "/", keyword, ": keyword \"",
                                                   keyword, "\" is not supported", why));
  }

  Symbol Ws() const { return GrammarBuilder::Ref(ws_); }
  Sequence Lit(std::string_view text) { return b_.Literal(text); }

  // ---- Generic JSON ----
  // One character inside a JSON string (raw or escaped).
  Symbol JsonChar() {
    if (!json_char_) {
      CodepointSet any;
      any.Add(0, kMaxCodepoint);
      json_char_ = CharSymbol(b_, any, TextContext::kJsonString);
    }
    return *json_char_;
  }
  int StringChars(int min, int max) {
    if (min == 0 && max < 0) {
      if (any_chars_ < 0) any_chars_ = b_.Repeat("chars", {JsonChar()}, 0, -1);
      return any_chars_;
    }
    return b_.Repeat("chars", {JsonChar()}, min, max);
  }
  int AnyString() {
    if (any_string_ < 0) {
      Sequence s = Lit("\"");
      s.push_back(GrammarBuilder::Ref(StringChars(0, -1)));
      s.push_back(b_.Bytes(ByteSet::Single('"')));
      any_string_ = b_.RuleOf("string", {s});
    }
    return any_string_;
  }
  int AnyNumber() {
    if (any_number_ < 0) any_number_ = NumberRule(/*integer=*/false);
    return any_number_;
  }
  int NumberRule(bool integer) {
    const Symbol digit = b_.Bytes(ByteSet::Range('0', '9'));
    Sequence int_part = {
        b_.Bytes(ByteSet::Range('1', '9')),
        GrammarBuilder::Ref(b_.Repeat("digits", {digit}, 0, kMaxIntegerDigits - 1))};
    const int magnitude = b_.RuleOf("int", {Lit("0"), int_part});
    Sequence number = {GrammarBuilder::Ref(b_.Optional("minus", Lit("-"))),
                       GrammarBuilder::Ref(magnitude)};
    if (integer) {
      // 1.0 is an integer too (JSON Schema counts values, not spellings).
      Sequence zero_fraction = Lit(".");
      zero_fraction.push_back(GrammarBuilder::Ref(b_.Repeat("zeros", Lit("0"), 1, 3)));
      number.push_back(GrammarBuilder::Ref(b_.Optional("zero-fraction", zero_fraction)));
      return b_.RuleOf("integer", {number});
    }
    Sequence fraction = Lit(".");
    fraction.push_back(GrammarBuilder::Ref(b_.Repeat("fraction", {digit}, 1, kMaxFractionDigits)));
    ByteSet e;
    e.Add('e');
    e.Add('E');
    ByteSet sign;
    sign.Add('+');
    sign.Add('-');
    Sequence exponent = {b_.Bytes(e), GrammarBuilder::Ref(b_.Optional("sign", {b_.Bytes(sign)})),
                         GrammarBuilder::Ref(b_.Repeat("exp", {digit}, 1, kMaxExponentDigits))};
    number.push_back(GrammarBuilder::Ref(b_.Optional("fraction", fraction)));
    number.push_back(GrammarBuilder::Ref(b_.Optional("exponent", exponent)));
    return b_.RuleOf("number", {number});
  }
  int AnyValue() {
    if (any_value_ >= 0) return any_value_;
    any_value_ = b_.AddRule("value");
    const int object = ObjectOf(any_value_, std::nullopt);
    Sequence array = Lit("[");
    array.push_back(Ws());
    array.push_back(GrammarBuilder::Ref(ItemsRule(any_value_, 0, -1)));
    array.push_back(b_.Bytes(ByteSet::Single(']')));
    const int array_rule = b_.RuleOf("array", {array});
    for (const Sequence& alt :
         {Sequence{GrammarBuilder::Ref(object)}, Sequence{GrammarBuilder::Ref(array_rule)},
          Sequence{GrammarBuilder::Ref(AnyString())}, Sequence{GrammarBuilder::Ref(AnyNumber())},
          Lit("true"), Lit("false"), Lit("null")}) {
      b_.AddAlternative(any_value_, alt);
    }
    return any_value_;
  }

  // value (ws "," ws value){min-1, max-1} ws, or nothing when min is 0; after "[" ws.
  int ItemsRule(int item, int min, int max) {
    Sequence more = {b_.Bytes(ByteSet::Single(',')), Ws(), GrammarBuilder::Ref(item), Ws()};
    Sequence first = {GrammarBuilder::Ref(item), Ws()};
    const int rest = b_.Repeat("items", more, std::max(min - 1, 0), max < 0 ? -1 : max - 1);
    first.push_back(GrammarBuilder::Ref(rest));
    if (min > 0) return b_.RuleOf("items", {first});
    if (max == 0) return b_.RuleOf("items", {Sequence{}});
    return b_.RuleOf("items", {first, Sequence{}});
  }

  // A JSON string key other than the declared ones (declared keys are ASCII without escapes;
  // other keys fall back to any string).
  int KeyNotIn(const std::vector<std::string>& declared) {
    // One rule per prefix of the declared keys: bounded, so a schema of huge names stays small.
    size_t total = 0;
    for (const std::string& k : declared) total += k.size();
    if (total > kMaxKeyTrieBytes) return AnyString();
    for (const std::string& k : declared) {
      for (char c : k) {
        if (static_cast<uint8_t>(c) >= 0x80 || c == '"' || c == '\\' || c < 0x20) {
          return AnyString();
        }
      }
    }
    CodepointSet any;
    any.Add(0, kMaxCodepoint);
    const int rest_chars = StringChars(0, -1);
    Sequence rest = {GrammarBuilder::Ref(rest_chars), b_.Bytes(ByteSet::Single('"'))};
    const int rest_rule = b_.RuleOf("key-rest", {rest});
    // One rule per prefix of the declared keys.
    std::map<std::string, int> rules;
    std::function<int(const std::string&)> node = [&](const std::string& prefix) -> int {
      if (auto it = rules.find(prefix); it != rules.end()) return it->second;
      const int rule = b_.AddRule("key");
      rules[prefix] = rule;
      bool is_key = false;
      std::set<char> next;
      for (const std::string& k : declared) {
        if (k == prefix) is_key = true;
        if (k.size() > prefix.size() && k.compare(0, prefix.size(), prefix) == 0) {
          next.insert(k[prefix.size()]);
        }
      }
      if (!is_key) b_.AddAlternative(rule, Lit("\""));
      CodepointSet other = any;
      CodepointSet excluded;
      excluded.Add('"');
      for (char c : next) {
        excluded.Add(static_cast<uint8_t>(c));
        b_.AddAlternative(rule, {b_.Bytes(ByteSet::Single(static_cast<uint8_t>(c))),
                                 GrammarBuilder::Ref(node(prefix + c))});
      }
      // Any other character (an escape counts as other) leaves every declared key behind.
      other = excluded.Complement();
      b_.AddAlternative(
          rule, {CharSymbol(b_, other, TextContext::kJsonString), GrammarBuilder::Ref(rest_rule)});
      return rule;
    };
    Sequence key = Lit("\"");
    key.push_back(GrammarBuilder::Ref(node("")));
    return b_.RuleOf("other-key", {key});
  }

  struct Property {
    std::string name;
    int value;
    bool required;
  };

  // "{" members "}" with `properties` in order and, when `additional` is set, other keys
  // with that value after them.
  int ObjectOf(int additional_value, std::optional<std::vector<Property>> properties) {
    std::vector<Property> props = properties.value_or(std::vector<Property>{});
    std::vector<std::string> names;
    for (const Property& p : props) names.push_back(p.name);
    // extra(prev): other members, each after a comma when something came before.
    int extra_after = -1, extra_first = -1;
    if (additional_value >= 0) {
      const int key = names.empty() ? AnyString() : KeyNotIn(names);
      Sequence member = {GrammarBuilder::Ref(key),
                         Ws(),
                         b_.Bytes(ByteSet::Single(':')),
                         Ws(),
                         GrammarBuilder::Ref(additional_value),
                         Ws()};
      Sequence more = {b_.Bytes(ByteSet::Single(',')), Ws()};
      more.insert(more.end(), member.begin(), member.end());
      const int tail = b_.Repeat("members", more, 0, -1);
      Sequence first = member;
      first.push_back(GrammarBuilder::Ref(tail));
      extra_first = b_.RuleOf("extra", {first, Sequence{}});
      extra_after = b_.RuleOf("extra", {Sequence{GrammarBuilder::Ref(tail)}});
    } else {
      extra_first = extra_after = b_.RuleOf("end", {Sequence{}});
    }
    // after[k][prev]: members k.. given whether one came before.
    int next_prev = extra_after, next_first = extra_first;
    for (int k = static_cast<int>(props.size()) - 1; k >= 0; --k) {
      const Property& p = props[k];
      Json name_json = p.name;
      Sequence member = Lit(name_json.dump());
      member.insert(member.end(), {Ws(), b_.Bytes(ByteSet::Single(':')), Ws(),
                                   GrammarBuilder::Ref(p.value), Ws()});
      Sequence with_comma = {b_.Bytes(ByteSet::Single(',')), Ws()};
      with_comma.insert(with_comma.end(), member.begin(), member.end());
      with_comma.push_back(GrammarBuilder::Ref(next_prev));
      Sequence without = member;
      without.push_back(GrammarBuilder::Ref(next_prev));
      std::vector<Sequence> prev_alts = {with_comma}, first_alts = {without};
      if (!p.required) {
        prev_alts.push_back({GrammarBuilder::Ref(next_prev)});
        first_alts.push_back({GrammarBuilder::Ref(next_first)});
      }
      next_prev = b_.RuleOf("members", prev_alts);
      next_first = b_.RuleOf("members", first_alts);
    }
    Sequence object = Lit("{");
    object.push_back(Ws());
    object.push_back(GrammarBuilder::Ref(next_first));
    object.push_back(b_.Bytes(ByteSet::Single('}')));
    return b_.RuleOf("object", {object});
  }

  // ---- Schema keywords ----
  absl::StatusOr<int> Schema(const Json& s, const std::string& pointer, int depth) {
    if (depth > limits_.max_depth) {
      return Refuse(pointer, absl::StrCat("nests deeper than ", limits_.max_depth, " levels"));
    }
    if (s.is_boolean()) {
      if (s.get<bool>()) return AnyValue();
      const int none = b_.AddRule("false");
      b_.AllowEmpty(none);
      return none;
    }
    if (!s.is_object()) return Refuse(pointer, "a schema must be an object or a boolean");
    std::set<std::string> constraints;
    for (const auto& [key, value] : s.items()) {
      if (!Annotations().count(key)) constraints.insert(key);
    }
    if (constraints.count("$ref")) {
      if (constraints.size() > 1) {
        constraints.erase("$ref");
        return Unsupported(pointer, *constraints.begin(), " next to $ref");
      }
      return Ref(s["$ref"], pointer, depth);
    }
    if (constraints.count("const") || constraints.count("enum")) {
      return EnumOf(s, constraints, pointer);
    }
    for (const char* combinator : {"anyOf", "oneOf", "allOf"}) {
      if (!constraints.count(combinator)) continue;
      if (constraints.size() > 1) {
        constraints.erase(combinator);
        return Unsupported(pointer, *constraints.begin(), absl::StrCat(" next to ", combinator));
      }
      const Json& list = s[combinator];
      const std::string at = absl::StrCat(pointer, "/", combinator);
      if (!list.is_array() || list.empty()) return Refuse(at, "must be a non-empty array");
      if (std::string_view(combinator) == "allOf" && list.size() != 1) {
        return Refuse(at, "allOf with more than one schema is not supported");
      }
      std::vector<Sequence> alternatives;
      for (size_t i = 0; i < list.size(); ++i) {
        absl::StatusOr<int> sub = Schema(list[i], absl::StrCat(at, "/", i), depth + 1);
        if (!sub.ok()) return sub.status();
        alternatives.push_back({GrammarBuilder::Ref(*sub)});
      }
      return b_.RuleOf(combinator, std::move(alternatives));
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const Json& item : t) {
          if (!item.is_string()) return Refuse(pointer + "/type", "must name types");
          types.push_back(item.get<std::string>());
        }
      } else {
        return Refuse(pointer + "/type", "must be a type name or a non-empty array of them");
      }
    } else {
      // No type: whichever types the other keywords imply, else anything.
      bool object_kw = false, array_kw = false, string_kw = false, number_kw = false;
      for (const std::string& k : constraints) {
        object_kw |= k == "properties" || k == "required" || k == "additionalProperties";
        array_kw |= k == "items" || k == "prefixItems" || k == "minItems" || k == "maxItems" ||
                    k == "additionalItems";
        string_kw |= k == "minLength" || k == "maxLength" || k == "pattern" || k == "format";
        number_kw |=
            k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum";
      }
      if (!object_kw && !array_kw && !string_kw && !number_kw) {
        for (const std::string& k : constraints) return Unsupported(pointer, k);
        return AnyValue();
      }
      // An instance of another type is valid too (keywords only constrain their own type).
      types = {"object", "array", "string", "number", "boolean", "null"};
    }
    std::set<std::string> used = {"type"};
    std::vector<Sequence> alternatives;
    for (const std::string& type : types) {
      absl::StatusOr<int> rule = TypeRule(type, s, pointer, depth, used);
      if (!rule.ok()) return rule.status();
      alternatives.push_back({GrammarBuilder::Ref(*rule)});
    }
    for (const std::string& k : constraints) {
      if (!used.count(k)) return Unsupported(pointer, k);
    }
    return b_.RuleOf("typed", std::move(alternatives));
  }

  absl::StatusOr<int> TypeRule(const std::string& type, const Json& s, const std::string& pointer,
                               int depth, std::set<std::string>& used) {
    if (type == "null") return b_.RuleOf("null", {Lit("null")});
    if (type == "boolean") return b_.RuleOf("boolean", {Lit("true"), Lit("false")});
    if (type == "string") return StringRule(s, pointer, used);
    if (type == "integer" || type == "number") return NumberSchema(s, pointer, type, used);
    if (type == "object") return ObjectSchema(s, pointer, depth, used);
    if (type == "array") return ArraySchema(s, pointer, depth, used);
    return Refuse(pointer + "/type", absl::StrCat("unknown type \"", type, "\""));
  }

  absl::StatusOr<int> LengthBound(const Json& s, const char* key, const std::string& pointer,
                                  int fallback, std::set<std::string>& used) {
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

  absl::StatusOr<int> StringRule(const Json& s, const std::string& pointer,
                                 std::set<std::string>& used) {
    absl::StatusOr<int> min = LengthBound(s, "minLength", pointer, 0, used);
    if (!min.ok()) return min.status();
    absl::StatusOr<int> max = LengthBound(s, "maxLength", pointer, -1, used);
    if (!max.ok()) return max.status();
    if (*max >= 0 && *max < *min) {
      return Refuse(pointer + "/maxLength", "is smaller than minLength: no string matches");
    }
    used.insert("pattern");
    used.insert("format");
    const bool pattern = s.contains("pattern"), format = s.contains("format");
    if ((pattern || format) && (*min > 0 || *max >= 0)) {
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
      body = StringChars(*min, *max);
    }
    Sequence string = Lit("\"");
    string.push_back(GrammarBuilder::Ref(body));
    string.push_back(b_.Bytes(ByteSet::Single('"')));
    return b_.RuleOf("string", {string});
  }

  absl::StatusOr<int> Format(const std::string& name, const std::string& pointer) {
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
  absl::Status Bound(const Json& s, const char* key, const std::string& pointer,
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

  absl::StatusOr<int> NumberSchema(const Json& s, const std::string& pointer,
                                   const std::string& type, std::set<std::string>& used) {
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
  int WholeNumber(int digits) {
    Sequence zero_fraction = Lit(".");
    zero_fraction.push_back(GrammarBuilder::Ref(b_.Repeat("zeros", Lit("0"), 1, 3)));
    return b_.RuleOf("whole", {{GrammarBuilder::Ref(digits),
                                GrammarBuilder::Ref(b_.Optional("zero-fraction", zero_fraction))}});
  }

  // Whole numbers in [lo, hi], canonical spelling.
  int IntegerRange(int64_t lo, int64_t hi) {
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

  absl::StatusOr<int> ObjectSchema(const Json& s, const std::string& pointer, int depth,
                                   std::set<std::string>& used) {
    used.insert({"properties", "required", "additionalProperties"});
    std::vector<Property> props;
    std::set<std::string> required;
    if (s.contains("required")) {
      const Json& r = s["required"];
      if (!r.is_array()) return Refuse(pointer + "/required", "must be an array of names");
      for (const Json& name : r) {
        if (!name.is_string()) return Refuse(pointer + "/required", "must be an array of names");
        required.insert(name.get<std::string>());
      }
    }
    std::set<std::string> declared;
    if (s.contains("properties")) {
      const Json& p = s["properties"];
      if (!p.is_object()) return Refuse(pointer + "/properties", "must be an object");
      // Document order (nlohmann sorts keys, so take the order from the source text).
      for (const std::string& name : KeysInOrder(p)) {
        absl::StatusOr<int> value =
            Schema(p[name], absl::StrCat(pointer, "/properties/", Escape(name)), depth + 1);
        if (!value.ok()) return value.status();
        props.push_back({name, *value, required.count(name) > 0});
        declared.insert(name);
      }
    }
    int additional = AnyValue();
    if (s.contains("additionalProperties")) {
      absl::StatusOr<int> a =
          Schema(s["additionalProperties"], pointer + "/additionalProperties", depth + 1);
      if (!a.ok()) return a.status();
      additional = s["additionalProperties"] == Json(false) ? -1 : *a;
    }
    // Required names without a declared schema may hold anything.
    for (const std::string& name : required) {
      if (!declared.count(name)) {
        if (additional < 0) {
          return Refuse(pointer + "/required",
                        absl::StrCat("\"", name,
                                     "\" is required but not declared and additionalProperties "
                                     "is false: no object matches"));
        }
        props.push_back({name, additional, true});
      }
    }
    return ObjectOf(additional, props);
  }

  absl::StatusOr<int> ArraySchema(const Json& s, const std::string& pointer, int depth,
                                  std::set<std::string>& used) {
    used.insert({"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"});
    if (s.contains("uniqueItems") && s["uniqueItems"] == Json(true)) {
      return Unsupported(pointer, "uniqueItems", " (true)");
    }
    absl::StatusOr<int> min = LengthBound(s, "minItems", pointer, 0, used);
    if (!min.ok()) return min.status();
    absl::StatusOr<int> max = LengthBound(s, "maxItems", pointer, -1, used);
    if (!max.ok()) return max.status();
    if (*max >= 0 && *max < *min) {
      return Refuse(pointer + "/maxItems", "is smaller than minItems: no array matches");
    }
    // Tuple items: prefixItems (2020-12) or items as an array (draft 7); the rest from items
    // (2020-12) or additionalItems (draft 7).
    std::vector<int> prefix;
    const Json* prefix_json = nullptr;
    const Json* rest_json = nullptr;
    std::string prefix_at, rest_at;
    if (s.contains("prefixItems")) {
      prefix_json = &s["prefixItems"];
      prefix_at = pointer + "/prefixItems";
      if (s.contains("items")) rest_json = &s["items"], rest_at = pointer + "/items";
    } else if (s.contains("items") && s["items"].is_array()) {
      prefix_json = &s["items"];
      prefix_at = pointer + "/items";
      if (s.contains("additionalItems")) {
        rest_json = &s["additionalItems"], rest_at = pointer + "/additionalItems";
      }
    } else if (s.contains("items")) {
      rest_json = &s["items"], rest_at = pointer + "/items";
    }
    if (prefix_json != nullptr) {
      if (!prefix_json->is_array()) return Refuse(prefix_at, "must be an array of schemas");
      for (size_t i = 0; i < prefix_json->size(); ++i) {
        absl::StatusOr<int> item =
            Schema((*prefix_json)[i], absl::StrCat(prefix_at, "/", i), depth + 1);
        if (!item.ok()) return item.status();
        prefix.push_back(*item);
      }
    }
    int rest = AnyValue();
    if (rest_json != nullptr) {
      absl::StatusOr<int> r = Schema(*rest_json, rest_at, depth + 1);
      if (!r.ok()) return r.status();
      rest = *rest_json == Json(false) ? -1 : *r;
    }
    // Elements: prefix[0..], each optional from where the count may stop, then the rest.
    const int n_prefix = static_cast<int>(prefix.size());
    const int max_items = *max;
    const int min_items = *min;
    if (rest < 0 && min_items > n_prefix) {
      return Refuse(pointer + "/minItems", "asks for more items than the tuple allows");
    }
    // tail(k): what may follow element k (k elements written), as a rule.
    const int rest_count_min = std::max(min_items - n_prefix, 0);
    const int rest_count_max =
        rest < 0 ? 0 : (max_items < 0 ? -1 : std::max(max_items - n_prefix, 0));
    int tail = -1;
    {
      // After all prefix elements: rest elements, each "," value.
      if (rest >= 0 && rest_count_max != 0) {
        Sequence more = {b_.Bytes(ByteSet::Single(',')), Ws(), GrammarBuilder::Ref(rest), Ws()};
        tail = b_.Repeat("rest", more, rest_count_min, rest_count_max);
      } else {
        tail = b_.RuleOf("end", {Sequence{}});
      }
    }
    // Build from the last prefix element back: after_k = "," ws prefix[k] ws after_{k+1},
    // optional when k >= min_items.
    const int limit_prefix = max_items < 0 ? n_prefix : std::min(n_prefix, max_items);
    int after = tail;
    for (int k = limit_prefix - 1; k >= 1; --k) {
      Sequence seq = {b_.Bytes(ByteSet::Single(',')), Ws(), GrammarBuilder::Ref(prefix[k]), Ws(),
                      GrammarBuilder::Ref(after)};
      std::vector<Sequence> alts = {seq};
      if (k >= min_items) alts.push_back(Sequence{});
      after = b_.RuleOf("tuple", alts);
    }
    std::vector<Sequence> body;
    if (limit_prefix > 0) {
      body.push_back({GrammarBuilder::Ref(prefix[0]), Ws(), GrammarBuilder::Ref(after)});
    } else if (rest >= 0 && max_items != 0) {
      // No tuple: items (ws "," ws items)*.
      body.push_back({GrammarBuilder::Ref(ItemsRule(rest, min_items, max_items))});
    }
    if (min_items == 0) body.push_back(Sequence{});
    if (body.empty()) return Refuse(pointer, "no array satisfies its bounds");
    Sequence array = Lit("[");
    array.push_back(Ws());
    array.push_back(GrammarBuilder::Ref(b_.RuleOf("elements", body)));
    array.push_back(b_.Bytes(ByteSet::Single(']')));
    return b_.RuleOf("array", {array});
  }

  absl::StatusOr<int> EnumOf(const Json& s, std::set<std::string> constraints,
                             const std::string& pointer) {
    constraints.erase("const");
    constraints.erase("enum");
    constraints.erase("type");
    if (!constraints.empty()) {
      return Unsupported(pointer, *constraints.begin(), " next to enum/const");
    }
    std::vector<Json> values;
    if (s.contains("const")) values.push_back(s["const"]);
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) {
        return Refuse(pointer + "/enum", "must be a non-empty array");
      }
      if (s.contains("const")) return Unsupported(pointer, "enum", " next to const");
      for (const Json& v : s["enum"]) values.push_back(v);
    }
    std::vector<Sequence> alternatives;
    for (const Json& v : values) {
      if (s.contains("type") && !OfType(v, s["type"])) continue;
      alternatives.push_back(Lit(v.dump()));
    }
    const int rule = b_.RuleOf("enum", std::move(alternatives));
    if (b_.defined(rule)) return rule;
    return Refuse(pointer, "no enum value has the schema's type");
  }

  static bool OfType(const Json& v, const Json& type) {
    const auto one = [&](const std::string& t) {
      if (t == "null") return v.is_null();
      if (t == "boolean") return v.is_boolean();
      if (t == "string") return v.is_string();
      if (t == "number") return v.is_number();
      if (t == "integer") {
        return v.is_number_integer() ||
               (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
      }
      if (t == "object") return v.is_object();
      if (t == "array") return v.is_array();
      return false;
    };
    if (type.is_string()) return one(type.get<std::string>());
    if (type.is_array()) {
      for (const Json& t : type) {
        if (t.is_string() && one(t.get<std::string>())) return true;
      }
    }
    return false;
  }

  absl::StatusOr<int> Ref(const Json& ref, const std::string& pointer, int depth) {
    if (!ref.is_string()) return Refuse(pointer + "/$ref", "must be a string");
    const std::string target = ref.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    if (target.empty() || target[0] != '#') {
      return Refuse(pointer + "/$ref",
                    absl::StrCat("\"", target,
                                 "\": only references inside the schema (#...) are "
                                 "supported"));
    }
    const std::string path = target.substr(1);
    Json::json_pointer json_pointer;
    try {
      json_pointer = Json::json_pointer(path);
    } catch (const Json::exception&) {
      return Refuse(pointer + "/$ref", absl::StrCat("\"", target, "\" is not a JSON pointer"));
    }
    // Debian's nlohmann (3.11.2) throws from contains() for a token that is not an array
    // index where the pointer meets an array ("#/items//0"), rather than answering false.
    bool found = false;
    try {
      found = root_.contains(json_pointer);
    } catch (const Json::exception&) {
      found = false;
    }
    if (!found) {
      return Refuse(pointer + "/$ref", absl::StrCat("\"", target, "\" points at nothing"));
    }
    // Registered before compiling the target, so recursion refers back to this rule.
    const int rule = b_.AddRule(absl::StrCat("ref ", target));
    refs_[target] = rule;
    absl::StatusOr<int> body = Schema(root_.at(json_pointer), path, depth + 1);
    if (!body.ok()) return body.status();
    b_.AddAlternative(rule, {GrammarBuilder::Ref(*body)});
    return rule;
  }

  static std::string Escape(const std::string& name) {
    std::string out;
    for (char c : name) {
      if (c == '~') {
        out += "~0";
      } else if (c == '/') {
        out += "~1";
      } else {
        out += c;
      }
    }
    return out;
  }

  // The keys of `object` in the order the source text wrote them.
  std::vector<std::string> KeysInOrder(const Json& object) const {
    std::vector<std::string> keys;
    for (const auto& [key, value] : object.items()) keys.push_back(key);
    if (key_order_ != nullptr) {
      std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
        return KeyRank(object, a) < KeyRank(object, b);
      });
    }
    return keys;
  }
  size_t KeyRank(const Json& object, const std::string& key) const {
    auto it = key_order_->find(&object);
    if (it == key_order_->end()) return 0;
    for (size_t i = 0; i < it->second.size(); ++i) {
      if (it->second[i] == key) return i;
    }
    return it->second.size();
  }

 public:
  // Object key order as written (nlohmann's json keeps keys sorted).
  const std::map<const Json*, std::vector<std::string>>* key_order_ = nullptr;

 private:
  const Json& root_;
  JsonSchemaLimits limits_;
  GrammarBuilder b_;
  int ws_ = -1;
  int any_value_ = -1;
  int any_string_ = -1;
  int any_number_ = -1;
  int any_integer_ = -1;
  int any_chars_ = -1;
  std::optional<Symbol> json_char_;
  std::map<std::string, int> refs_;
};

}  // namespace

absl::StatusOr<Grammar> CompileJsonSchema(std::string_view schema, const JsonSchemaLimits& limits,
                                          const JsonFraming& framing) {
  if (schema.size() > limits.max_schema_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the schema is ", schema.size(), " bytes, over the limit of ", limits.max_schema_bytes));
  }
  if (JsonNestingDepth(schema) > 2 * limits.max_depth + 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("the schema nests deeper than ", limits.max_depth, " levels"));
  }
  // Parse with ordered objects to learn key order, then use the plain form for lookups.
  nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(schema, nullptr, false);
  if (ordered.is_discarded()) {
    try {
      const Json probe = Json::parse(schema);
      return absl::InvalidArgumentError(
          absl::StrCat("the schema is not valid JSON (", probe.type_name(), ")"));
    } catch (const Json::exception& e) {  // parse_error, or out_of_range for 1e999
      return absl::InvalidArgumentError(absl::StrCat("the schema is not valid JSON: ", e.what()));
    }
    return absl::InvalidArgumentError("the schema is not valid JSON");
  }
  const Json root = Json::parse(schema, nullptr, false);
  std::map<const Json*, std::vector<std::string>> key_order;
  // Walk both trees together: the same paths reach the same objects.
  std::function<void(const Json&, const nlohmann::ordered_json&)> walk =
      [&](const Json& plain, const nlohmann::ordered_json& ord) {
        if (plain.is_object()) {
          std::vector<std::string>& keys = key_order[&plain];
          for (const auto& [key, value] : ord.items()) {
            keys.push_back(key);
            walk(plain.at(key), value);
          }
        } else if (plain.is_array()) {
          for (size_t i = 0; i < plain.size(); ++i) walk(plain[i], ord[i]);
        }
      };
  walk(root, ordered);
  SchemaCompiler compiler(root, limits);
  compiler.key_order_ = &key_order;
  return compiler.Compile(framing);
}

absl::StatusOr<Grammar> JsonObjectGrammar(const JsonSchemaLimits& limits) {
  const Json empty = Json::object();
  return SchemaCompiler(empty, limits).AnyObject();
}

}  // namespace textgen::model
