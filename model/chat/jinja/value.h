#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace textgen::model::jinja {

// A byte range [begin, end) of a string that came from untrusted input (a message's content).
// The renderer carries these through concatenation, slicing and stripping, so the caller
// knows which output bytes must never be read as control tokens.
struct TaintRange {
  size_t begin = 0;
  size_t end = 0;
};

// An immutable string plus its tainted ranges (sorted, disjoint, non-empty).
struct TaintedString {
  std::string bytes;
  std::vector<TaintRange> taint;

  bool tainted() const { return !taint.empty(); }
  // The ranges of bytes[begin, end), shifted to start at 0.
  std::vector<TaintRange> TaintOf(size_t begin, size_t end) const;
};

class Value;
class Dict;
struct CallArgs;
struct Callable;
class Interpreter;
using List = std::vector<Value>;

// Jinja's Undefined: remembers why it is undefined for the error its use raises.
struct Undefined {
  std::string reason;  // "'x' is undefined", "'dict object' has no attribute 'y'"
};

struct None {};

// Deepest value a namespace may hold. Only a namespace carries a value from one loop
// iteration to the next, so this bounds how deep any value gets (deep enough for any JSON a
// request may carry), and with it the recursion of ==, repr and tojson.
inline constexpr int kMaxValueDepth = 200;

// A value as Python-hosted Jinja2 sees it. Lists and dicts are shared (Python reference
// semantics); strings are shared immutable.
class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

  Value() : data_(Undefined{}) {}
  static Value MakeUndefined(std::string reason) { return Value(Undefined{std::move(reason)}); }
  static Value MakeNone() { return Value(None{}); }
  static Value Bool(bool b) { return Value(b); }
  static Value Int(int64_t i) { return Value(i); }
  static Value Float(double f) { return Value(f); }
  static Value String(std::string s);
  static Value String(TaintedString s);
  static Value Tainted(std::string s);  // all bytes untrusted
  static Value MakeList(List items);
  static Value MakeDict(Dict dict);
  // A namespace() object: a dict whose attributes `set ns.x = ...` may assign.
  static Value MakeNamespace(Dict dict);
  // A Python tuple: a list that prints as "(a, b)".
  static Value MakeTuple(List items);
  // What Jinja's map/select/reject filters return: a Python generator, which iterates like
  // a list but has no length, cannot be indexed or serialized, and is always true.
  static Value MakeGenerator(List items);
  // A markupsafe.Markup string (from |safe or |escape): `+` HTML-escapes a plain string
  // added to it, as in Python.
  static Value Markup(TaintedString s);
  static Value MakeCallable(Callable callable);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }  // bool is not, as in Jinja tests
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_namespace() const { return is_dict() && (flags_ & kNamespace); }
  bool is_tuple() const { return is_list() && (flags_ & kTuple); }
  bool is_generator() const { return is_list() && (flags_ & kGenerator); }
  bool is_markup() const { return is_string() && (flags_ & kMarkup); }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // Numeric value of an int, float or bool (Python treats bool as int).
  double as_double() const;
  const std::string& str() const { return std::get<StringPtr>(data_)->bytes; }
  const TaintedString& tainted_str() const { return *std::get<StringPtr>(data_); }
  const List& list() const { return *std::get<ListPtr>(data_); }
  List& mutable_list() const { return *std::get<ListPtr>(data_); }
  const Dict& dict() const { return *std::get<DictPtr>(data_); }
  Dict& mutable_dict() const { return *std::get<DictPtr>(data_); }
  const Callable& callable() const { return *std::get<CallablePtr>(data_); }
  const std::string& undefined_reason() const { return std::get<Undefined>(data_).reason; }

  // Python truthiness.
  bool Truthy() const;
  // Python ==, with 1 == 1.0 == True; lists and dicts compare deeply.
  bool Equals(const Value& other) const;
  // The Python type name Jinja puts in messages ("str", "dict", "NoneType").
  std::string TypeName() const;
  // How many lists, tuples and dicts nest here: 0 for a scalar, 1 for [1, 2], 2 for [[1]].
  // A namespace counts 1 whatever it holds: its contents change, and nothing walks into it
  // except repr, which has its own bound. Kept at construction (nothing but a namespace is
  // mutable), so the renderer can refuse a value before a recursive walk overflows the stack.
  int nesting_depth() const { return nesting_depth_; }

 private:
  using StringPtr = std::shared_ptr<const TaintedString>;
  using ListPtr = std::shared_ptr<List>;
  using DictPtr = std::shared_ptr<Dict>;
  using CallablePtr = std::shared_ptr<const Callable>;
  using Data = std::variant<Undefined, None, bool, int64_t, double, StringPtr, ListPtr, DictPtr,
                            CallablePtr>;

  template <typename T>
  explicit Value(T data) : data_(std::move(data)) {}
  Value WithFlag(uint8_t flag) && {
    flags_ = flag;
    return std::move(*this);
  }
  static int DepthAbove(int child_depth);

  enum Flag : uint8_t { kNamespace = 1, kTuple = 2, kGenerator = 4, kMarkup = 8 };

  Data data_;
  uint8_t flags_ = 0;
  uint16_t nesting_depth_ = 0;  // saturates at 65535
};

// An insertion-ordered dict (Python 3.7+ dicts keep order, and tojson must too).
class Dict {
 public:
  Dict() = default;
  // From entries whose keys are known to be distinct (no lookups while building).
  explicit Dict(std::vector<std::pair<Value, Value>> distinct_entries);

  const Value* Find(const Value& key) const;
  const Value* Find(absl::string_view key) const;
  void Set(Value key, Value value);
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  // Small dicts (messages, loop) are scanned; beyond this many entries string keys are
  // hashed, so a request's JSON object with many keys costs linear time, not quadratic.
  static constexpr size_t kIndexFrom = 16;
  std::optional<size_t> IndexOf(absl::string_view key) const;

  std::vector<std::pair<Value, Value>> entries_;
  absl::flat_hash_map<std::string, size_t> string_index_;  // valid when indexed_
  bool indexed_ = false;                                   // size() > kIndexFrom
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Something a template can call: a builtin, a bound method, a macro, `caller`.
struct Callable {
  std::string name;
  std::function<absl::StatusOr<Value>(CallArgs& args, Interpreter& interpreter)> call;
};

}  // namespace textgen::model::jinja
