#include "model/chat/json_value.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace textgen::model {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxJsonDepth = 64;

absl::StatusOr<jinja::Value> Convert(const Json& json, bool tainted, int depth,
                                     absl::string_view what) {
  if (depth > kMaxJsonDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " nests deeper than ", kMaxJsonDepth, " levels"));
  }
  const auto string = [&](std::string text) {
    return tainted ? jinja::Value::Tainted(std::move(text)) : jinja::Value::String(std::move(text));
  };
  switch (json.type()) {
    case Json::value_t::null:
      return jinja::Value::MakeNone();
    case Json::value_t::boolean:
      return jinja::Value::Bool(json.get<bool>());
    case Json::value_t::number_integer:
      return jinja::Value::Int(json.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const uint64_t value = json.get<uint64_t>();
      if (value > static_cast<uint64_t>(INT64_MAX))
        return jinja::Value::Float(static_cast<double>(value));
      return jinja::Value::Int(static_cast<int64_t>(value));
    }
    case Json::value_t::number_float:
      return jinja::Value::Float(json.get<double>());
    case Json::value_t::string:
      return string(json.get<std::string>());
    case Json::value_t::array: {
      jinja::List items;
      for (const Json& item : json) {
        absl::StatusOr<jinja::Value> value = Convert(item, tainted, depth + 1, what);
        if (!value.ok()) return value;
        items.push_back(*std::move(value));
      }
      return jinja::Value::MakeList(std::move(items));
    }
    case Json::value_t::object: {
      jinja::Dict dict;
      for (const auto& [key, item] : json.items()) {
        absl::StatusOr<jinja::Value> value = Convert(item, tainted, depth + 1, what);
        if (!value.ok()) return value;
        dict.Set(string(key), *std::move(value));
      }
      return jinja::Value::MakeDict(std::move(dict));
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat(what, " holds a value JSON cannot express"));
  }
}

}  // namespace

absl::StatusOr<jinja::Value> ParseJsonValue(absl::string_view json, bool tainted,
                                            absl::string_view what) {
  Json parsed = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not valid JSON"));
  }
  return Convert(parsed, tainted, 0, what);
}

}  // namespace textgen::model
