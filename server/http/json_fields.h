#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace textgen::server::http {

// Ordered: a JSON Schema's properties (response_format, tools) keep the order they were sent
// in, which is the order a constrained reply writes them.
using Json = nlohmann::ordered_json;

// Deepest JSON nesting a request body may have (a chat request needs about 6; tool schemas a
// few more). Checked on the raw bytes before parsing.
inline constexpr int kMaxRequestJsonDepth = 64;

// INVALID_ARGUMENT with `param` as its kParamPayload (none when empty).
absl::Status FieldError(absl::string_view param, absl::string_view message);
// "a string", "an object", ...: how error messages name what a client sent.
std::string JsonTypeName(const Json& value);
// "<field> must be <expected>, got <what it is>".
absl::Status WrongType(absl::string_view field, absl::string_view expected, const Json& got);

// A request body: one JSON object, nested at most kMaxRequestJsonDepth deep. Errors say what
// is wrong and where (nlohmann's byte offset).
absl::StatusOr<Json> ParseBody(absl::string_view body);

// Typed access to a request object's fields: absent and null both mean "not given"; a value of
// the wrong type is WrongType naming the field.
class Fields {
 public:
  explicit Fields(const Json& object) : object_(object) {}

  const Json* Find(const char* name) const;
  bool Has(const char* name) const { return Find(name) != nullptr; }

  absl::Status Number(const char* name, std::optional<double>& out) const;
  // An integer (a float with no fraction too, from clients that send 5.0).
  absl::Status Integer(const char* name, std::optional<int64_t>& out) const;
  absl::Status Bool(const char* name, std::optional<bool>& out) const;
  absl::Status String(const char* name, std::optional<std::string>& out) const;

 private:
  const Json& object_;
};

}  // namespace textgen::server::http
