#pragma once

// Private to the JSON Schema compiler (json_schema*.cc): the compiler class, whose members are
// defined by theme: the generic JSON rules and the keywords' dispatch (json_schema_compiler.cc),
// strings and numbers (json_schema_values.cc), objects and arrays (json_schema_containers.cc).

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
#include "model/constraint/grammar.h"
#include "model/constraint/json_schema.h"
#include "model/constraint/regex.h"
#include "nlohmann/json.hpp"

namespace textgen::model::json_schema_internal {

using Json = nlohmann::json;

constexpr int kMaxIntegerDigits = 19;
constexpr int kMaxFractionDigits = 16;
constexpr int kMaxExponentDigits = 3;
// Declared property names longer than this in total fall back to "any key" for additional
// properties (a repeated declared key is then possible; documented).
constexpr size_t kMaxKeyTrieBytes = 4096;
constexpr uint64_t kLargestInteger = 9'999'999'999'999'999'999ULL;  // 19 digits

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
  absl::StatusOr<int> Body(const JsonFraming& framing);

  absl::StatusOr<Grammar> Compile(const JsonFraming& framing);

  absl::StatusOr<Grammar> AnyObject();

 private:
  static absl::Status Refuse(const std::string& pointer, absl::string_view what);
  static absl::Status Unsupported(const std::string& pointer, const std::string& keyword,
                                  absl::string_view why = "");

  Symbol Ws() const { return GrammarBuilder::Ref(ws_); }
  Sequence Lit(std::string_view text) { return b_.Literal(text); }

  // ---- Generic JSON ----
  // One character inside a JSON string (raw or escaped).
  Symbol JsonChar();
  int StringChars(int min, int max);
  int AnyString();
  int AnyNumber();
  int NumberRule(bool integer);
  int AnyValue();

  // value (ws "," ws value){min-1, max-1} ws, or nothing when min is 0; after "[" ws.
  int ItemsRule(int item, int min, int max);

  // A JSON string key other than the declared ones (declared keys are ASCII without escapes;
  // other keys fall back to any string).
  int KeyNotIn(const std::vector<std::string>& declared);

  struct Property {
    std::string name;
    int value;
    bool required;
  };

  // "{" members "}" with `properties` in order and, when `additional` is set, other keys
  // with that value after them.
  int ObjectOf(int additional_value, std::optional<std::vector<Property>> properties);

  // ---- Schema keywords ----
  absl::StatusOr<int> Schema(const Json& s, const std::string& pointer, int depth);

  absl::StatusOr<int> TypeRule(const std::string& type, const Json& s, const std::string& pointer,
                               int depth, std::set<std::string>& used);

  absl::StatusOr<int> LengthBound(const Json& s, const char* key, const std::string& pointer,
                                  int fallback, std::set<std::string>& used);

  // minLength and maxLength (-1: none), checked against each other.
  absl::StatusOr<std::pair<int, int>> LengthBounds(const Json& s, const std::string& pointer,
                                                   std::set<std::string>& used);

  absl::StatusOr<int> StringRule(const Json& s, const std::string& pointer,
                                 std::set<std::string>& used);

  absl::StatusOr<int> Format(const std::string& name, const std::string& pointer);

  // An integer bound: whole numbers only.
  absl::Status Bound(const Json& s, const char* key, const std::string& pointer,
                     std::optional<int64_t>& out, std::set<std::string>& used);

  absl::StatusOr<int> NumberSchema(const Json& s, const std::string& pointer,
                                   const std::string& type, std::set<std::string>& used);

  // `digits` optionally followed by ".0" (up to three zeros): 3.0 is the number 3.
  int WholeNumber(int digits);

  // Whole numbers in [lo, hi], canonical spelling.
  int IntegerRange(int64_t lo, int64_t hi);

  absl::StatusOr<int> ObjectSchema(const Json& s, const std::string& pointer, int depth,
                                   std::set<std::string>& used);

  absl::StatusOr<int> ArraySchema(const Json& s, const std::string& pointer, int depth,
                                  std::set<std::string>& used);

  absl::StatusOr<int> EnumOf(const Json& s, std::set<std::string> constraints,
                             const std::string& pointer);

  static bool OfType(const Json& v, const Json& type);

  absl::StatusOr<int> Ref(const Json& ref, const std::string& pointer, int depth);
  // The schema a chain of $refs ends at (nullptr when one points at nothing).
  const Json* Resolve(const Json& s) const;

  // ---- Arguments written other than as a JSON object (json_schema_arguments.cc) ----
  // An object schema's properties as qwen3-coder's <parameter=KEY> blocks or as Python
  // keyword arguments.
  absl::StatusOr<int> ArgumentList(const Json& s, const std::string& pointer, int depth,
                                   JsonFraming::Arguments form);
  // A text parameter's value: its enum or const as written, text its pattern matches, between
  // minLength and maxLength characters other than "<", or any text without the closing tag
  // (format is not checked).
  absl::StatusOr<int> XmlTextValue(const Json& s, const std::string& pointer);
  int XmlAnyText();

  static std::string Escape(const std::string& name);

  // The keys of `object` in the order the source text wrote them.
  std::vector<std::string> KeysInOrder(const Json& object) const;
  size_t KeyRank(const Json& object, const std::string& key) const;

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
  int xml_any_text_ = -1;
  std::optional<Symbol> json_char_;
  std::map<std::string, int> refs_;
};

}  // namespace textgen::model::json_schema_internal
