// A tool's arguments written other than as a JSON object (JsonFraming::arguments): qwen3-coder's
//   <parameter=KEY>\nVALUE\n</parameter>\n
// per property, VALUE raw text for text parameters and JSON for the others, or LFM2's Python
// keyword arguments KEY=VALUE, ... with JSON values.

#include <string_view>

#include "model/constraint/json_schema_compiler.h"

namespace textgen::model::json_schema_internal {
namespace {

constexpr char kParameterClose[] = "</parameter>";

// Every codepoint but the ASCII characters in `excluded`.
CodepointSet AllExcept(std::string_view excluded) {
  CodepointSet set;
  for (const char c : excluded) set.Add(static_cast<unsigned char>(c));
  return set.Complement();
}

}  // namespace

int SchemaCompiler::XmlAnyText() {
  if (xml_any_text_ >= 0) return xml_any_text_;
  // Text without "</parameter>": state k has matched its first k bytes. From each state the
  // text may end, continue the tag, restart it with "<", or fall back to state 0; the last
  // byte of the tag is never allowed, so the tag never completes inside the text.
  const size_t n = sizeof(kParameterClose) - 1;
  std::vector<int> state(n);
  for (size_t k = 0; k < n; ++k) state[k] = b_.AddRule(absl::StrCat("xml-text-", k));
  for (size_t k = 0; k < n; ++k) {
    b_.AddAlternative(state[k], {});
    const char next = kParameterClose[k];
    if (k + 1 < n) {
      b_.AddAlternative(state[k],
                        {b_.Bytes(ByteSet::Single(next)), GrammarBuilder::Ref(state[k + 1])});
    }
    if (k > 0) {
      b_.AddAlternative(state[k], {b_.Bytes(ByteSet::Single('<')), GrammarBuilder::Ref(state[1])});
    }
    const std::string excluded = k == 0 ? "<" : std::string{'<', next};
    b_.AddAlternative(state[k], {CharSymbol(b_, AllExcept(excluded), TextContext::kRaw),
                                 GrammarBuilder::Ref(state[0])});
  }
  xml_any_text_ = state[0];
  return xml_any_text_;
}

absl::StatusOr<int> SchemaCompiler::XmlTextValue(const Json& s, const std::string& pointer) {
  if (s.contains("const")) {
    if (!s["const"].is_string()) return Refuse(pointer + "/const", "must be a string");
    return b_.RuleOf("xml-const", {Lit(s["const"].get<std::string>())});
  }
  if (s.contains("enum")) {
    const Json& values = s["enum"];
    if (!values.is_array() || values.empty()) {
      return Refuse(pointer + "/enum", "must be a non-empty array");
    }
    std::vector<Sequence> alternatives;
    for (const Json& v : values) {
      if (v.is_string()) alternatives.push_back(Lit(v.get<std::string>()));
    }
    if (alternatives.empty()) return Refuse(pointer + "/enum", "has no string of type string");
    return b_.RuleOf("xml-enum", std::move(alternatives));
  }
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return Refuse(pointer + "/pattern", "must be a string");
    absl::StatusOr<CompiledRegex> regex =
        CompileRegex(b_, s["pattern"].get<std::string>(), TextContext::kRaw);
    if (!regex.ok()) return Refuse(pointer + "/pattern", regex.status().message());
    // Not anchored unless it says so, as in JSON strings.
    Sequence text;
    if (!regex->anchored_start) text.push_back(GrammarBuilder::Ref(XmlAnyText()));
    text.push_back(GrammarBuilder::Ref(regex->rule));
    if (!regex->anchored_end) text.push_back(GrammarBuilder::Ref(XmlAnyText()));
    return b_.RuleOf("xml-pattern", {text});
  }
  std::set<std::string> used;
  absl::StatusOr<std::pair<int, int>> bounds = LengthBounds(s, pointer, used);
  if (!bounds.ok()) return bounds.status();
  if (const auto [min, max] = *bounds; min > 0 || max >= 0) {
    // Counted characters, none of them "<" (so none starts the closing tag).
    return b_.Repeat("xml-text-bounded", {CharSymbol(b_, AllExcept("<"), TextContext::kRaw)}, min,
                     max);
  }
  return XmlAnyText();
}

absl::StatusOr<int> SchemaCompiler::ArgumentList(const Json& s, const std::string& pointer,
                                                 int depth, JsonFraming::Arguments form) {
  const bool xml = form == JsonFraming::Arguments::kXmlParameters;
  const Json* object = Resolve(s);
  if (object == nullptr) return Refuse(pointer + "/$ref", "points at nothing");
  if (!object->is_object()) {
    return Refuse(pointer, "must be an object schema (a tool's parameters)");
  }
  std::set<std::string> required;
  if (object->contains("required") && (*object)["required"].is_array()) {
    for (const Json& name : (*object)["required"]) {
      if (name.is_string()) required.insert(name.get<std::string>());
    }
  }
  struct Member {
    Sequence text;
    bool required;
  };
  std::vector<Member> members;
  if (object->contains("properties")) {
    const Json& properties = (*object)["properties"];
    if (!properties.is_object()) return Refuse(pointer + "/properties", "must be an object");
    for (const std::string& name : KeysInOrder(properties)) {
      const std::string at = absl::StrCat(pointer, "/properties/", Escape(name));
      const Json* property = Resolve(properties[name]);
      if (property == nullptr) return Refuse(at + "/$ref", "points at nothing");
      absl::StatusOr<int> value = xml && IsXmlTextParameter(properties[name])
                                      ? XmlTextValue(*property, at)
                                      : Schema(properties[name], at, depth + 1);
      if (!value.ok()) return value.status();
      Sequence text = Lit(xml ? absl::StrCat("<parameter=", name, ">\n") : name + "=");
      text.push_back(GrammarBuilder::Ref(*value));
      if (xml) {
        for (const Symbol& symbol : Lit(absl::StrCat("\n", kParameterClose, "\n"))) {
          text.push_back(symbol);
        }
      }
      members.push_back({std::move(text), required.contains(name)});
      required.erase(name);
    }
  }
  if (!required.empty()) {
    return Refuse(pointer + "/required",
                  absl::StrCat("\"", *required.begin(),
                               "\" is required but not declared: calls write only declared "
                               "parameters"));
  }
  // From the last member back: tail[i][k] writes members i.. when k members came before
  // (k is 0 or 1: whether a separator goes first), each optional one present or not.
  const std::string separator = xml ? "" : ", ";
  int next_first = b_.RuleOf("arguments-end", {Sequence{}});
  int next_later = next_first;
  for (size_t i = members.size(); i-- > 0;) {
    int tail[2];
    for (int later = 0; later < 2; ++later) {
      Sequence present = later ? Lit(separator) : Sequence{};
      present.insert(present.end(), members[i].text.begin(), members[i].text.end());
      present.push_back(GrammarBuilder::Ref(next_later));
      std::vector<Sequence> alternatives = {std::move(present)};
      if (!members[i].required)
        alternatives.push_back({GrammarBuilder::Ref(later ? next_later : next_first)});
      tail[later] = b_.RuleOf("arguments", std::move(alternatives));
    }
    next_first = tail[0];
    next_later = tail[1];
  }
  return next_first;
}

}  // namespace textgen::model::json_schema_internal
