#include "model/chat/json_value.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace textgen::model {
namespace {

using jinja::Value;

constexpr size_t kMaxJsonDepth = 64;

// Builds Values straight from nlohmann's SAX events: no intermediate json tree, object keys
// in document order (nlohmann's ordered_json finds keys by linear search, quadratic on a
// request with many keys), later duplicates replacing earlier ones as in Python's json.loads.
class ValueBuilder final : public nlohmann::json_sax<nlohmann::json> {
 public:
  ValueBuilder(bool tainted, absl::string_view what) : tainted_(tainted), what_(what) {}

  absl::StatusOr<Value> Result() && {
    if (!error_.ok()) return error_;
    return std::move(result_);
  }

  bool null() override { return Add(Value::MakeNone()); }
  bool boolean(bool value) override { return Add(Value::Bool(value)); }
  bool number_integer(number_integer_t value) override { return Add(Value::Int(value)); }
  bool number_unsigned(number_unsigned_t value) override {
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Add(Value::Float(static_cast<double>(value)));
    }
    return Add(Value::Int(static_cast<int64_t>(value)));
  }
  bool number_float(number_float_t value, const string_t&) override {
    return Add(Value::Float(value));
  }
  bool string(string_t& value) override { return Add(Text(std::move(value))); }
  bool binary(binary_t&) override { return Fail("holds binary data"); }
  bool start_object(std::size_t) override { return Open(Value::MakeDict({})); }
  bool key(string_t& value) override {
    keys_.back() = Text(std::move(value));
    return true;
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(Value::MakeList({})); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception&) override {
    return Fail(absl::StrCat("is not valid JSON (at byte ", position, ")"));
  }

 private:
  Value Text(std::string text) const {
    return tainted_ ? Value::Tainted(std::move(text)) : Value::String(std::move(text));
  }

  bool Fail(absl::string_view why) {
    if (error_.ok()) error_ = absl::InvalidArgumentError(absl::StrCat(what_, " ", why));
    return false;
  }

  // Puts `value` into the innermost open container (or makes it the result).
  bool Add(Value value) {
    if (open_.empty()) {
      result_ = std::move(value);
    } else if (open_.back().is_list()) {
      open_.back().mutable_list().push_back(std::move(value));
    } else {
      open_.back().mutable_dict().Set(std::move(keys_.back()), std::move(value));
    }
    return true;
  }

  bool Open(Value container) {
    if (open_.size() >= kMaxJsonDepth) {
      return Fail(absl::StrCat("nests deeper than ", kMaxJsonDepth, " levels"));
    }
    open_.push_back(std::move(container));
    keys_.emplace_back();
    return true;
  }

  bool Close() {
    Value done = std::move(open_.back());
    open_.pop_back();
    keys_.pop_back();
    return Add(std::move(done));
  }

  const bool tainted_;
  const absl::string_view what_;
  std::vector<Value> open_;  // containers being filled, outermost first
  std::vector<Value> keys_;  // the pending key of each open object
  Value result_;
  absl::Status error_;
};

}  // namespace

namespace {

absl::StatusOr<Value> Convert(const nlohmann::ordered_json& json, bool tainted,
                              absl::string_view what, size_t depth) {
  using Type = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case Type::null:
    case Type::discarded:
      return Value::MakeNone();
    case Type::boolean:
      return Value::Bool(json.get<bool>());
    case Type::number_integer:
      return Value::Int(json.get<int64_t>());
    case Type::number_unsigned: {
      const uint64_t value = json.get<uint64_t>();
      if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Value::Float(static_cast<double>(value));
      }
      return Value::Int(static_cast<int64_t>(value));
    }
    case Type::number_float:
      return Value::Float(json.get<double>());
    case Type::string:
      return tainted ? Value::Tainted(json.get<std::string>())
                     : Value::String(json.get<std::string>());
    case Type::binary:
      return absl::InvalidArgumentError(absl::StrCat(what, " holds binary data"));
    case Type::array:
    case Type::object:
      break;
  }
  if (depth >= kMaxJsonDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " nests deeper than ", kMaxJsonDepth, " levels"));
  }
  if (json.is_array()) {
    jinja::List items;
    items.reserve(json.size());
    for (const nlohmann::ordered_json& item : json) {
      absl::StatusOr<Value> value = Convert(item, tainted, what, depth + 1);
      if (!value.ok()) return value.status();
      items.push_back(*std::move(value));
    }
    return Value::MakeList(std::move(items));
  }
  Value dict = Value::MakeDict({});
  for (const auto& [key, item] : json.items()) {
    absl::StatusOr<Value> value = Convert(item, tainted, what, depth + 1);
    if (!value.ok()) return value.status();
    dict.mutable_dict().Set(tainted ? Value::Tainted(key) : Value::String(key), *std::move(value));
  }
  return dict;
}

}  // namespace

absl::StatusOr<jinja::Value> JsonToValue(const nlohmann::ordered_json& json, bool tainted,
                                         absl::string_view what) {
  return Convert(json, tainted, what, 0);
}

absl::StatusOr<jinja::Value> ParseJsonValue(absl::string_view json, bool tainted,
                                            absl::string_view what) {
  ValueBuilder builder(tainted, what);
  const bool ok = nlohmann::json::sax_parse(json.begin(), json.end(), &builder);
  absl::StatusOr<Value> result = std::move(builder).Result();
  if (!ok && result.ok())
    return absl::InvalidArgumentError(absl::StrCat(what, " is not valid JSON"));
  return result;
}

}  // namespace textgen::model
