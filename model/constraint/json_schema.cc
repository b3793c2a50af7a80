#include "model/constraint/json_schema.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/base/json_nesting.h"
#include "model/constraint/json_schema_compiler.h"
#include "nlohmann/json.hpp"

namespace textgen::model {

using json_schema_internal::Json;
using json_schema_internal::SchemaCompiler;

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
