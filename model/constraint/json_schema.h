#pragma once

// JSON Schema (the subset structured-output clients send, OpenAI's strict mode and more)
// compiled into a grammar whose strings are exactly compact-or-lightly-spaced JSON documents
// the schema accepts. Supported: type (and unions), enum, const, properties, required,
// additionalProperties, anyOf, oneOf (as anyOf), allOf of one schema, $ref to "#", "#/$defs/..."
// and "#/definitions/..." (recursion included), items, prefixItems, additionalItems,
// minItems, maxItems, minLength, maxLength, pattern, format (date, time, date-time, uuid,
// email), minimum, maximum, exclusiveMinimum, exclusiveMaximum (whole-number bounds).
// Anything else that constrains an instance is refused, naming the keyword and its JSON
// pointer; annotations (title, description, default, examples, ...) are ignored.
//
// The rules that keep generation bounded (docs/structured-output.md):
//   - properties come in the schema's order, declared ones before any additional ones;
//   - whitespace between two tokens of JSON is nothing, one space, or one or two newlines and
//     at most `max_indent` spaces or tabs (as llama.cpp's schema converter allows);
//   - integers have at most 19 digits, fractions 16, exponents 3.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/constraint/grammar.h"

namespace textgen::model {

struct JsonSchemaLimits {
  size_t max_schema_bytes = 256 * 1024;
  int max_depth = 64;           // nesting of the schema document
  int max_indent = 20;          // spaces or tabs after a newline
  int max_length_bound = 4096;  // largest minLength/maxLength/minItems/maxItems honoured
  GrammarLimits grammar;
};

// Fixed text around the document, and how many documents may follow each other: a tool
// call's markup ("<tool_call>\n" ... "\n</tool_call>", up to N calls separated by "\n").
struct JsonFraming {
  std::string before;
  std::string after;
  std::string separator;
  int max_documents = 1;
  int max_leading_whitespace = 0;  // spaces or newlines allowed before the first document
  // Up to max_sections free-text sections before the first document, each section_open, any
  // UTF-8 text, then section_close (a reasoning model's thinking before its answer).
  std::string section_open;
  std::string section_close;
  int max_sections = 0;
  // When not empty, one entry per branch of the root schema's anyOf: a document of branch i
  // is before, before_branch[i], then the branch (a call whose header names its tool outside
  // the JSON).
  std::vector<std::string> before_branch;
  // How each branch of the root's anyOf, an object schema (a tool's parameters), is written
  // when it is not a JSON object: its properties in the schema's order (required ones
  // always, others optionally), none undeclared, as
  //   kXmlParameters    "<parameter=KEY>\nVALUE\n</parameter>\n" blocks (qwen3-coder), VALUE
  //                     raw text when IsXmlTextParameter(property) and JSON otherwise;
  //   kPythonKeywords   "KEY=VALUE" joined by ", " (LFM2's Python calls), VALUE JSON.
  enum class Arguments { kJsonObject, kXmlParameters, kPythonKeywords };
  Arguments arguments = Arguments::kJsonObject;
  // Once around the run of documents (LFM2's "[" ... "]" around its calls).
  std::string open;
  std::string close;
  bool operator==(const JsonFraming&) const = default;
};

// Whether qwen3-coder's XML parameters write a value of this schema as raw text (the model's
// template writes strings as they are): its own "type" is "string", or it has no type and its
// enum (or const) holds strings only. One rule for the reply parser and the constraint; a
// template, so that any nlohmann::basic_json serves.
template <typename JsonT>
bool IsXmlTextParameter(const JsonT& property_schema) {
  if (!property_schema.is_object()) return false;
  if (property_schema.contains("type")) return property_schema["type"] == "string";
  if (property_schema.contains("const")) return property_schema["const"].is_string();
  if (!property_schema.contains("enum")) return false;
  const JsonT& values = property_schema["enum"];
  if (!values.is_array() || values.empty()) return false;
  for (const JsonT& v : values) {
    if (!v.is_string()) return false;
  }
  return true;
}

absl::StatusOr<Grammar> CompileJsonSchema(std::string_view schema,
                                          const JsonSchemaLimits& limits = {},
                                          const JsonFraming& framing = {});

// Any JSON object (OpenAI's json_object mode).
absl::StatusOr<Grammar> JsonObjectGrammar(const JsonSchemaLimits& limits = {});

}  // namespace textgen::model
