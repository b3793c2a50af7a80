#include "server/http/json_fields.h"

#include <cmath>
#include <limits>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "model/base/json_nesting.h"
#include "model/tokenizer/utf8.h"
#include "server/http/api_error.h"

namespace textgen::server::http {

absl::Status FieldError(absl::string_view param, absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(message);
  if (!param.empty()) status.SetPayload(kParamPayload, absl::Cord(param));
  return status;
}

std::string JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

absl::Status WrongType(absl::string_view field, absl::string_view expected, const Json& got) {
  return FieldError(field, absl::StrCat(field, " must be ", expected, ", got ", JsonTypeName(got)));
}

const Json* Fields::Find(const char* name) const {
  const auto it = object_.find(name);
  return it == object_.end() || it->is_null() ? nullptr : &*it;
}

absl::Status Fields::Number(const char* name, std::optional<double>& out) const {
  const Json* value = Find(name);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_number()) return WrongType(name, "a number", *value);
  out = value->get<double>();
  return absl::OkStatus();
}

absl::Status Fields::Integer(const char* name, std::optional<int64_t>& out) const {
  const Json* value = Find(name);
  if (value == nullptr) return absl::OkStatus();
  if (value->is_number_unsigned()) {
    const uint64_t u = value->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return FieldError(name, absl::StrCat(name, " is too large (", u, ")"));
    }
    out = static_cast<int64_t>(u);
  } else if (value->is_number_integer()) {
    out = value->get<int64_t>();
  } else if (value->is_number_float() && std::trunc(value->get<double>()) == value->get<double>() &&
             std::abs(value->get<double>()) < 9e15) {
    out = static_cast<int64_t>(value->get<double>());  // 5.0 from a client that sends floats
  } else {
    return WrongType(name, "an integer", *value);
  }
  return absl::OkStatus();
}

absl::Status Fields::Bool(const char* name, std::optional<bool>& out) const {
  const Json* value = Find(name);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_boolean()) return WrongType(name, "a boolean", *value);
  out = value->get<bool>();
  return absl::OkStatus();
}

absl::Status Fields::String(const char* name, std::optional<std::string>& out) const {
  const Json* value = Find(name);
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_string()) return WrongType(name, "a string", *value);
  out = value->get<std::string>();
  return absl::OkStatus();
}

absl::StatusOr<Json> ParseBody(absl::string_view body) {
  if (body.empty()) {
    return FieldError("", "the request body is empty; send a JSON object");
  }
  if (const int depth = model::JsonNestingDepth(std::string_view(body.data(), body.size()));
      depth > kMaxRequestJsonDepth) {
    return FieldError(
        "", absl::StrCat("the request body nests deeper than ", kMaxRequestJsonDepth, " levels"));
  }
  Json parsed;
  try {
    parsed = Json::parse(body.begin(), body.end());
  } catch (const Json::exception& e) {
    // nlohmann's message names the byte and what it expected (or the number that overflows:
    // out_of_range.406, not a parse_error).
    std::string what = e.what();
    if (const size_t at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    // nlohmann quotes the bytes it last read, which may be any bytes: the message stays UTF-8.
    return FieldError(
        "", absl::StrCat("the request body is not valid JSON: ", model::SanitizeUtf8(what)));
  }
  if (!parsed.is_object()) {
    return FieldError(
        "", absl::StrCat("the request body must be a JSON object, got ", JsonTypeName(parsed)));
  }
  return parsed;
}

}  // namespace textgen::server::http
