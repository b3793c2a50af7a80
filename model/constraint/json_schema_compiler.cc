#include "model/constraint/json_schema_compiler.h"

namespace textgen::model::json_schema_internal {
namespace {

// Keywords that only describe (ignored).
const std::set<std::string>& Annotations() {
  static const std::set<std::string>* names = new std::set<std::string>{
      "$schema",     "$id",     "$comment",    "$anchor",          "title",
      "description", "default", "examples",    "deprecated",       "readOnly",
      "writeOnly",   "$defs",   "definitions", "contentMediaType", "contentEncoding"};
  return *names;
}

}  // namespace

// The document: the root schema, or with before_branch each branch of its anyOf after its
// own text.
absl::StatusOr<int> SchemaCompiler::Body(const JsonFraming& framing) {
  if (framing.before_branch.empty()) return Schema(root_, "", 0);
  const auto branches = root_.is_object() ? root_.find("anyOf") : root_.end();
  if (!root_.is_object() || branches == root_.end() || !branches->is_array() ||
      branches->size() != framing.before_branch.size()) {
    return Refuse("/anyOf", absl::StrCat("must have one branch per framed text (",
                                         framing.before_branch.size(), ")"));
  }
  std::vector<Sequence> alternatives;
  for (size_t i = 0; i < framing.before_branch.size(); ++i) {
    const std::string pointer = absl::StrCat("/anyOf/", i);
    absl::StatusOr<int> branch = framing.arguments == JsonFraming::Arguments::kJsonObject
                                     ? Schema((*branches)[i], pointer, 1)
                                     : ArgumentList((*branches)[i], pointer, 1, framing.arguments);
    if (!branch.ok()) return branch.status();
    Sequence alternative = Lit(framing.before_branch[i]);
    alternative.push_back(GrammarBuilder::Ref(*branch));
    alternatives.push_back(std::move(alternative));
  }
  return b_.RuleOf("branches", std::move(alternatives));
}

absl::StatusOr<Grammar> SchemaCompiler::Compile(const JsonFraming& framing) {
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
    if (!framing.open.empty()) {
      const Sequence open = Lit(framing.open);
      document.insert(document.begin(), open.begin(), open.end());
    }
    for (const Symbol& s : Lit(framing.close)) document.push_back(s);
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
    return Refuse(
        "", absl::StrCat("no JSON value satisfies the schema (", grammar.status().message(), ")"));
  }
  return grammar;
}

absl::StatusOr<Grammar> SchemaCompiler::AnyObject() {
  return b_.Build(ObjectOf(AnyValue(), std::nullopt), limits_.grammar);
}

absl::Status SchemaCompiler::Refuse(const std::string& pointer, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("schema ", pointer.empty() ? "(root)" : pointer, ": ", what));
}

absl::Status SchemaCompiler::Unsupported(const std::string& pointer, const std::string& keyword,
                                         absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("schema ", pointer, "/", keyword, ": keyword \"",
                                                 keyword, "\" is not supported", why));
}

// ---- Generic JSON ----
// One character inside a JSON string (raw or escaped).
Symbol SchemaCompiler::JsonChar() {
  if (!json_char_) {
    CodepointSet any;
    any.Add(0, kMaxCodepoint);
    json_char_ = CharSymbol(b_, any, TextContext::kJsonString);
  }
  return *json_char_;
}

int SchemaCompiler::StringChars(int min, int max) {
  if (min == 0 && max < 0) {
    if (any_chars_ < 0) any_chars_ = b_.Repeat("chars", {JsonChar()}, 0, -1);
    return any_chars_;
  }
  return b_.Repeat("chars", {JsonChar()}, min, max);
}

int SchemaCompiler::AnyString() {
  if (any_string_ < 0) {
    Sequence s = Lit("\"");
    s.push_back(GrammarBuilder::Ref(StringChars(0, -1)));
    s.push_back(b_.Bytes(ByteSet::Single('"')));
    any_string_ = b_.RuleOf("string", {s});
  }
  return any_string_;
}

int SchemaCompiler::AnyNumber() {
  if (any_number_ < 0) any_number_ = NumberRule(/*integer=*/false);
  return any_number_;
}

int SchemaCompiler::NumberRule(bool integer) {
  const Symbol digit = b_.Bytes(ByteSet::Range('0', '9'));
  Sequence int_part = {b_.Bytes(ByteSet::Range('1', '9')),
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

int SchemaCompiler::AnyValue() {
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

// ---- Schema keywords ----
absl::StatusOr<int> SchemaCompiler::Schema(const Json& s, const std::string& pointer, int depth) {
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

absl::StatusOr<int> SchemaCompiler::TypeRule(const std::string& type, const Json& s,
                                             const std::string& pointer, int depth,
                                             std::set<std::string>& used) {
  if (type == "null") return b_.RuleOf("null", {Lit("null")});
  if (type == "boolean") return b_.RuleOf("boolean", {Lit("true"), Lit("false")});
  if (type == "string") return StringRule(s, pointer, used);
  if (type == "integer" || type == "number") return NumberSchema(s, pointer, type, used);
  if (type == "object") return ObjectSchema(s, pointer, depth, used);
  if (type == "array") return ArraySchema(s, pointer, depth, used);
  return Refuse(pointer + "/type", absl::StrCat("unknown type \"", type, "\""));
}

absl::StatusOr<int> SchemaCompiler::EnumOf(const Json& s, std::set<std::string> constraints,
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

bool SchemaCompiler::OfType(const Json& v, const Json& type) {
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

absl::StatusOr<int> SchemaCompiler::Ref(const Json& ref, const std::string& pointer, int depth) {
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

const Json* SchemaCompiler::Resolve(const Json& s) const {
  const Json* at = &s;
  for (int hops = 0; hops < 16; ++hops) {
    if (!at->is_object() || !at->contains("$ref") || !(*at)["$ref"].is_string()) return at;
    const std::string target = (*at)["$ref"].get<std::string>();
    if (target.empty() || target[0] != '#') return nullptr;
    try {
      const Json::json_pointer pointer(target.substr(1));
      if (!root_.contains(pointer)) return nullptr;
      at = &root_.at(pointer);
    } catch (const Json::exception&) {
      return nullptr;
    }
  }
  return nullptr;  // a cycle of references
}

std::string SchemaCompiler::Escape(const std::string& name) {
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

}  // namespace textgen::model::json_schema_internal
