#include "model/chat/jinja/value.h"

#include <algorithm>
#include <limits>

namespace textgen::model::jinja {

std::vector<TaintRange> TaintedString::TaintOf(size_t begin, size_t end) const {
  std::vector<TaintRange> out;
  for (const TaintRange& range : taint) {
    const size_t b = std::max(range.begin, begin);
    const size_t e = std::min(range.end, end);
    if (b < e) out.push_back({b - begin, e - begin});
  }
  return out;
}

Dict::Dict(std::vector<std::pair<Value, Value>> distinct_entries)
    : entries_(std::move(distinct_entries)) {
  if (entries_.size() > kIndexFrom) {
    indexed_ = true;
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].first.is_string()) string_index_.emplace(entries_[i].first.str(), i);
    }
  }
}

std::optional<size_t> Dict::IndexOf(absl::string_view key) const {
  if (indexed_) {
    if (auto it = string_index_.find(key); it != string_index_.end()) return it->second;
    return std::nullopt;
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Value& k = entries_[i].first;
    if (k.is_string() && k.str() == key) return i;
  }
  return std::nullopt;
}

const Value* Dict::Find(const Value& key) const {
  if (key.is_string()) return Find(key.str());
  for (const auto& [k, v] : entries_) {
    if (k.Equals(key)) return &v;
  }
  return nullptr;
}

const Value* Dict::Find(absl::string_view key) const {
  const std::optional<size_t> index = IndexOf(key);
  return index ? &entries_[*index].second : nullptr;
}

void Dict::Set(Value key, Value value) {
  if (key.is_string()) {
    if (const std::optional<size_t> index = IndexOf(key.str())) {
      entries_[*index].second = std::move(value);
      return;
    }
  } else {
    for (auto& [k, v] : entries_) {
      if (k.Equals(key)) {
        v = std::move(value);
        return;
      }
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
  if (indexed_) {
    if (entries_.back().first.is_string()) {
      string_index_.emplace(entries_.back().first.str(), entries_.size() - 1);
    }
  } else if (entries_.size() > kIndexFrom) {
    indexed_ = true;
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].first.is_string()) string_index_.emplace(entries_[i].first.str(), i);
    }
  }
}

Value Value::String(std::string s) {
  return Value(std::make_shared<const TaintedString>(TaintedString{std::move(s), {}}));
}

Value Value::String(TaintedString s) {
  return Value(std::make_shared<const TaintedString>(std::move(s)));
}

Value Value::Tainted(std::string s) {
  TaintedString tainted{std::move(s), {}};
  if (!tainted.bytes.empty()) tainted.taint.push_back({0, tainted.bytes.size()});
  return String(std::move(tainted));
}

int Value::DepthAbove(int child_depth) {
  return std::min(child_depth + 1, static_cast<int>(std::numeric_limits<uint16_t>::max()));
}

Value Value::MakeList(List items) {
  int deepest = 0;
  for (const Value& item : items) deepest = std::max(deepest, item.nesting_depth());
  Value list(std::make_shared<List>(std::move(items)));
  list.nesting_depth_ = static_cast<uint16_t>(DepthAbove(deepest));
  return list;
}

Value Value::MakeDict(Dict dict) {
  int deepest = 0;
  for (const auto& [key, value] : dict.entries()) {
    deepest = std::max({deepest, key.nesting_depth(), value.nesting_depth()});
  }
  Value made(std::make_shared<Dict>(std::move(dict)));
  made.nesting_depth_ = static_cast<uint16_t>(DepthAbove(deepest));
  return made;
}

Value Value::MakeNamespace(Dict dict) {
  Value ns = Value(std::make_shared<Dict>(std::move(dict))).WithFlag(kNamespace);
  ns.nesting_depth_ = 1;
  return ns;
}

Value Value::MakeTuple(List items) { return MakeList(std::move(items)).WithFlag(kTuple); }

Value Value::MakeGenerator(List items) { return MakeList(std::move(items)).WithFlag(kGenerator); }

Value Value::Markup(TaintedString s) { return String(std::move(s)).WithFlag(kMarkup); }

Value Value::MakeCallable(Callable callable) {
  return Value(std::make_shared<const Callable>(std::move(callable)));
}

double Value::as_double() const {
  if (is_int()) return static_cast<double>(as_int());
  if (is_bool()) return as_bool() ? 1.0 : 0.0;
  return as_float();
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_float() != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return is_generator() || !list().empty();
    case Kind::kDict:
      return is_namespace() || dict().size() > 0;
    case Kind::kCallable:
      return true;
  }
  return false;
}

bool Value::Equals(const Value& other) const {
  const bool numeric = is_number() || is_bool();
  const bool other_numeric = other.is_number() || other.is_bool();
  if (numeric && other_numeric) {
    if (is_float() || other.is_float()) return as_double() == other.as_double();
    const int64_t a = is_bool() ? as_bool() : as_int();
    const int64_t b = other.is_bool() ? other.as_bool() : other.as_int();
    return a == b;
  }
  if (kind() != other.kind()) return false;
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return str() == other.str();
    case Kind::kList: {
      const List& a = list();
      const List& b = other.list();
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!a[i].Equals(b[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (is_namespace() || other.is_namespace()) return &dict() == &other.dict();
      if (dict().size() != other.dict().size()) return false;
      for (const auto& [key, value] : dict().entries()) {
        const Value* found = other.dict().Find(key);
        if (found == nullptr || !found->Equals(value)) return false;
      }
      return true;
    }
    case Kind::kCallable:
      return &callable() == &other.callable();
    default:
      return false;
  }
}

std::string Value::TypeName() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return is_markup() ? "Markup" : "str";
    case Kind::kList:
      return is_generator() ? "generator" : is_tuple() ? "tuple" : "list";
    case Kind::kDict:
      return is_namespace() ? "Namespace" : "dict";
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

}  // namespace textgen::model::jinja
