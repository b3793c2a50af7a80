#include "model/constraint/json_schema_compiler.h"

namespace textgen::model::json_schema_internal {

// value (ws "," ws value){min-1, max-1} ws, or nothing when min is 0; after "[" ws.
int SchemaCompiler::ItemsRule(int item, int min, int max) {
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
int SchemaCompiler::KeyNotIn(const std::vector<std::string>& declared) {
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

// "{" members "}" with `properties` in order and, when `additional` is set, other keys
// with that value after them.
int SchemaCompiler::ObjectOf(int additional_value,
                             std::optional<std::vector<Property>> properties) {
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
    member.insert(member.end(),
                  {Ws(), b_.Bytes(ByteSet::Single(':')), Ws(), GrammarBuilder::Ref(p.value), Ws()});
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

absl::StatusOr<int> SchemaCompiler::ObjectSchema(const Json& s, const std::string& pointer,
                                                 int depth, std::set<std::string>& used) {
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

absl::StatusOr<int> SchemaCompiler::ArraySchema(const Json& s, const std::string& pointer,
                                                int depth, std::set<std::string>& used) {
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

// The keys of `object` in the order the source text wrote them.
std::vector<std::string> SchemaCompiler::KeysInOrder(const Json& object) const {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  if (key_order_ != nullptr) {
    std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
      return KeyRank(object, a) < KeyRank(object, b);
    });
  }
  return keys;
}

size_t SchemaCompiler::KeyRank(const Json& object, const std::string& key) const {
  auto it = key_order_->find(&object);
  if (it == key_order_->end()) return 0;
  for (size_t i = 0; i < it->second.size(); ++i) {
    if (it->second[i] == key) return i;
  }
  return it->second.size();
}

}  // namespace textgen::model::json_schema_internal
