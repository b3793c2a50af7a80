#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/chat/jinja/value.h"

// Python's operators and containers as Jinja exposes them: arithmetic, comparison,
// membership, iteration, subscripts and slices, and the string building that keeps the
// tainted ranges of untrusted text.
namespace textgen::model::jinja {

class Interpreter;

// markupsafe's escape(): & < > " ' as HTML entities.
std::string HtmlEscape(absl::string_view text);
// A template error without a position yet (the interpreter adds line and column).
absl::Status TypeError(absl::string_view message);
// Using an Undefined for anything but printing, testing or iterating.
absl::Status UndefinedError(const Value& undefined);

// str(value) keeping taint: strings as they are, containers tainted whole when any string
// inside them is.
TaintedString ToText(const Value& value);
bool DeepTainted(const Value& value);
// A new string built from `inputs`: tainted whole when any input is (for operations that
// do not keep byte positions, such as replace or upper).
Value DerivedString(std::string bytes, std::initializer_list<const Value*> inputs);
// a ~ b and a + b on strings, and join: ranges shift with their bytes.
void AppendText(const TaintedString& part, TaintedString* out);
// bytes [begin, end) of a string value, with their taint.
Value Substring(const Value& string, size_t begin, size_t end);

absl::StatusOr<Value> BinaryOp(absl::string_view op, const Value& left, const Value& right,
                               Interpreter& interpreter);
// ==, !=, <, <=, >, >=.
absl::StatusOr<bool> Compare(absl::string_view op, const Value& left, const Value& right);
// `item in container`.
absl::StatusOr<bool> Contains(const Value& container, const Value& item);
// Python sort order for sort/dictsort/min/max (numbers, strings, lists); errors otherwise.
absl::StatusOr<bool> LessThan(const Value& left, const Value& right);

// What `for x in value` visits: list items, dict keys, string characters; nothing for
// Undefined.
absl::StatusOr<std::vector<Value>> Iterate(const Value& value);

// value.name: dict keys and namespace attributes, bound string/dict/list methods.
absl::StatusOr<Value> GetAttribute(const Value& object, absl::string_view name);
// value[key], falling back to an attribute as Jinja does.
absl::StatusOr<Value> GetItem(const Value& object, const Value& key);
// value[start:stop:step] on lists and strings (by code point).
absl::StatusOr<Value> GetSlice(const Value& object, const Value& start, const Value& stop,
                               const Value& step);

// A method of a built-in type bound to its receiver; an Undefined saying why for a method the
// sandbox refuses (list.append); a plain Undefined (no reason) when there is none.
Value BoundMethod(const Value& object, absl::string_view name);

}  // namespace textgen::model::jinja
