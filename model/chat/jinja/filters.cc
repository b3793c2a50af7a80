// Jinja2's filters: `value | name(args)`.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "model/base/status_macros.h"
#include "model/chat/jinja/builtins.h"
#include "model/chat/jinja/call_args.h"
#include "model/chat/jinja/operators.h"
#include "model/chat/jinja/python_text.h"

namespace textgen::model::jinja {
namespace {

// Jinja's attribute paths ("a.b", "items.0") for map, sort, selectattr, ...
absl::StatusOr<Value> GetPath(const Value& item, const Value& path) {
  if (path.is_int()) return GetItem(item, path);
  if (!path.is_string()) return TypeError("attribute must be a string");
  Value current = item;
  for (absl::string_view part : absl::StrSplit(path.str(), '.')) {
    int64_t index = 0;
    const Value key =
        absl::SimpleAtoi(part, &index) ? Value::Int(index) : Value::String(std::string(part));
    absl::StatusOr<Value> next = GetItem(current, key);
    if (!next.ok()) return next;
    current = *std::move(next);
  }
  return current;
}

// The key sort, unique, min and max compare: strings lower-cased unless case_sensitive.
Value SortKey(const Value& value, bool case_sensitive) {
  if (!case_sensitive && value.is_string()) return Value::String(PyLower(value.str()));
  return value;
}

// The comparison key of each item: the item or its `attribute` path (None = the item),
// lower-cased unless case_sensitive.
absl::StatusOr<std::vector<Value>> SortKeys(const std::vector<Value>& items, const Value& attribute,
                                            bool case_sensitive) {
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const Value& item : items) {
    Value key = item;
    if (!attribute.is_none()) {
      absl::StatusOr<Value> got = GetPath(item, attribute);
      if (!got.ok()) return got.status();
      key = *std::move(got);
    }
    keys.push_back(SortKey(key, case_sensitive));
  }
  return keys;
}

absl::Status SortValues(std::vector<Value>& keys, std::vector<Value>& items, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  absl::Status error;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (!error.ok()) return false;
    absl::StatusOr<bool> less = reverse ? LessThan(keys[b], keys[a]) : LessThan(keys[a], keys[b]);
    if (!less.ok()) {
      error = less.status();
      return false;
    }
    return *less;
  });
  if (!error.ok()) return error;
  std::vector<Value> sorted;
  sorted.reserve(items.size());
  for (size_t i : order) sorted.push_back(items[i]);
  items.swap(sorted);
  return absl::OkStatus();
}

absl::StatusOr<Value> Sort(const Value& input, const CallArgs& args) {
  if (absl::Status s = CheckArgs(args, 3, {"reverse", "case_sensitive", "attribute"}, "sort");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<Value>> items = Iterate(input);
  if (!items.ok()) return items.status();
  const bool reverse = Arg(args, 0, "reverse", Value::Bool(false)).Truthy();
  const bool case_sensitive = Arg(args, 1, "case_sensitive", Value::Bool(false)).Truthy();
  const Value attribute = Arg(args, 2, "attribute", Value::MakeNone());
  absl::StatusOr<std::vector<Value>> keys = SortKeys(*items, attribute, case_sensitive);
  if (!keys.ok()) return keys.status();
  TEXTGEN_RETURN_IF_ERROR(SortValues(*keys, *items, reverse));
  return Value::MakeList(*std::move(items));
}

absl::StatusOr<Value> DictSort(const Value& input, const CallArgs& args) {
  if (!input.is_dict()) return TypeError("dictsort needs a dict");
  const bool case_sensitive = Arg(args, 0, "case_sensitive", Value::Bool(false)).Truthy();
  const Value by = Arg(args, 1, "by", Value::String("key"));
  const bool reverse = Arg(args, 2, "reverse", Value::Bool(false)).Truthy();
  const bool by_value = by.is_string() && by.str() == "value";
  std::vector<Value> items;
  std::vector<Value> keys;
  for (const auto& [key, value] : input.dict().entries()) {
    items.push_back(Value::MakeTuple({key, value}));
    keys.push_back(SortKey(by_value ? value : key, case_sensitive));
  }
  TEXTGEN_RETURN_IF_ERROR(SortValues(keys, items, reverse));
  return Value::MakeList(std::move(items));
}

// select / reject / selectattr / rejectattr.
absl::StatusOr<Value> Select(const Value& input, CallArgs& args, bool keep_matches,
                             bool by_attribute, Interpreter& interpreter) {
  if (!input.Truthy()) return Value::MakeGenerator({});  // Jinja skips a false input
  absl::StatusOr<std::vector<Value>> items = Iterate(input);
  if (!items.ok()) return items.status();
  size_t next = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) return TypeError("selectattr/rejectattr need an attribute");
    attribute = args.positional[next++];
  }
  std::string test;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string()) return TypeError("the test name must be a string");
    test = args.positional[next++].str();
  }
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<ptrdiff_t>(next),
                              args.positional.end());
  test_args.keyword = args.keyword;
  List out;
  for (const Value& item : *items) {
    Value subject = item;
    if (by_attribute) {
      absl::StatusOr<Value> got = GetPath(item, attribute);
      if (!got.ok()) return got.status();
      subject = *std::move(got);
    }
    bool match = false;
    if (test.empty()) {
      match = subject.Truthy();
    } else {
      absl::StatusOr<bool> result = ApplyTest(test, subject, test_args, interpreter);
      if (!result.ok()) return result.status();
      match = *result;
    }
    if (match == keep_matches) out.push_back(item);
  }
  return Value::MakeGenerator(std::move(out));
}

absl::StatusOr<Value> Map(const Value& input, CallArgs& args, Interpreter& interpreter) {
  if (!input.Truthy()) return Value::MakeGenerator({});  // Jinja skips a false input
  absl::StatusOr<std::vector<Value>> items = Iterate(input);
  if (!items.ok()) return items.status();
  List out;
  if (args.positional.empty()) {
    const Value attribute = Arg(args, 99, "attribute");
    if (attribute.is_undefined()) return TypeError("map needs a filter name or attribute=");
    const Value fallback = Arg(args, 99, "default");
    for (const Value& item : *items) {
      absl::StatusOr<Value> got = GetPath(item, attribute);
      if (!got.ok()) return got.status();
      out.push_back(got->is_undefined() && !fallback.is_undefined() ? fallback : *got);
    }
    return Value::MakeGenerator(std::move(out));
  }
  if (!args.positional[0].is_string()) return TypeError("map needs a filter name");
  const std::string filter = args.positional[0].str();
  CallArgs filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const Value& item : *items) {
    CallArgs call_args = filter_args;
    absl::StatusOr<Value> mapped = ApplyFilter(filter, item, call_args, interpreter);
    if (!mapped.ok()) return mapped.status();
    out.push_back(*std::move(mapped));
  }
  return Value::MakeGenerator(std::move(out));
}

absl::StatusOr<Value> Join(const Value& input, const CallArgs& args, Interpreter& interpreter) {
  TEXTGEN_RETURN_IF_ERROR(CheckArgs(args, 2, {"d", "attribute"}, "join"));
  absl::StatusOr<std::vector<Value>> items = Iterate(input);
  if (!items.ok()) return items.status();
  const Value separator = Arg(args, 0, "d", Value::String(""));
  const Value attribute = Arg(args, 1, "attribute", Value::MakeNone());
  TaintedString out;
  bool first = true;
  for (const Value& item : *items) {
    Value value = item;
    if (!attribute.is_none()) {
      absl::StatusOr<Value> got = GetPath(item, attribute);
      if (!got.ok()) return got.status();
      value = *std::move(got);
    }
    if (!first) AppendText(ToText(separator), &out);
    first = false;
    AppendText(ToText(value), &out);
    TEXTGEN_RETURN_IF_ERROR(interpreter.CheckBytes(out.bytes.size()));
  }
  TEXTGEN_RETURN_IF_ERROR(interpreter.Charge(out.bytes.size()));
  return Value::String(std::move(out));
}

absl::StatusOr<Value> Indent(const Value& input, const CallArgs& args) {
  if (absl::Status s = CheckArgs(args, 3, {"width", "first", "blank"}, "indent"); !s.ok()) {
    return s;
  }
  const Value width = Arg(args, 0, "width", Value::Int(4));
  std::string indentation;
  if (width.is_string()) {
    indentation = width.str();
  } else if (width.is_int() && width.as_int() >= 0 && width.as_int() <= 4096) {
    indentation.assign(static_cast<size_t>(width.as_int()), ' ');
  } else {
    return TypeError("indent width must be a string or an integer in [0, 4096]");
  }
  const bool first = Arg(args, 1, "first", Value::Bool(false)).Truthy();
  const bool blank = Arg(args, 2, "blank", Value::Bool(false)).Truthy();
  const std::string text = PyStr(input) + "\n";
  std::vector<std::string> lines;
  size_t begin = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '\r') {
      lines.push_back(text.substr(begin, i - begin));
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      begin = i + 1;
    }
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (blank || !lines[i].empty())) out += indentation;
    out += lines[i];
  }
  if (first) out = indentation + out;
  return DerivedString(std::move(out), {&input});
}

absl::StatusOr<Value> ToJson(const Value& input, const CallArgs& args) {
  if (absl::Status s =
          CheckArgs(args, 4, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
      !s.ok()) {
    return s;
  }
  JsonOptions options;
  options.ensure_ascii = Arg(args, 0, "ensure_ascii", Value::Bool(false)).Truthy();
  const Value indent = Arg(args, 1, "indent", Value::MakeNone());
  if (indent.is_int()) {
    if (indent.as_int() < 0 || indent.as_int() > 64) return TypeError("tojson indent out of range");
    options.indent = static_cast<int>(indent.as_int());
  } else if (!indent.is_none()) {
    return TypeError("tojson indent must be an integer");
  }
  const Value separators = Arg(args, 2, "separators", Value::MakeNone());
  if (separators.is_list() && separators.list().size() == 2 && separators.list()[0].is_string() &&
      separators.list()[1].is_string()) {
    options.item_separator = separators.list()[0].str();
    options.key_separator = separators.list()[1].str();
  } else if (!separators.is_none()) {
    return TypeError("tojson separators must be a pair of strings");
  }
  options.sort_keys = Arg(args, 3, "sort_keys", Value::Bool(false)).Truthy();
  absl::StatusOr<std::string> json = PyJsonDumps(input, options);
  if (!json.ok()) return json.status();
  return DerivedString(*std::move(json), {&input});
}

absl::StatusOr<Value> ToInt(const Value& input, const CallArgs& args) {
  const Value fallback = Arg(args, 0, "default", Value::Int(0));
  if (input.is_int()) return input;
  if (input.is_bool()) return Value::Int(input.as_bool() ? 1 : 0);
  if (input.is_float()) {
    if (!std::isfinite(input.as_float()) || std::abs(input.as_float()) > 9.2e18) return fallback;
    return Value::Int(static_cast<int64_t>(input.as_float()));
  }
  if (input.is_string()) {
    const auto [begin, end] = PyStripRange(input.str(), std::nullopt, true, true);
    const std::string text = input.str().substr(begin, end - begin);
    int64_t value = 0;
    if (absl::SimpleAtoi(text, &value)) return Value::Int(value);
    double real = 0;
    if (absl::SimpleAtod(text, &real) && std::isfinite(real) && std::abs(real) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(real));
    }
  }
  return fallback;
}

absl::StatusOr<Value> ToFloat(const Value& input, const CallArgs& args) {
  const Value fallback = Arg(args, 0, "default", Value::Float(0.0));
  if (input.is_number() || input.is_bool()) return Value::Float(input.as_double());
  if (input.is_string()) {
    double value = 0;
    const auto [begin, end] = PyStripRange(input.str(), std::nullopt, true, true);
    if (absl::SimpleAtod(input.str().substr(begin, end - begin), &value)) {
      return Value::Float(value);
    }
  }
  return fallback;
}

absl::StatusOr<Value> MinMax(const Value& input, const CallArgs& args, bool max) {
  absl::StatusOr<std::vector<Value>> items = Iterate(input);
  if (!items.ok()) return items.status();
  if (items->empty()) return Value::MakeUndefined("no items in the sequence");
  const bool case_sensitive = Arg(args, 0, "case_sensitive", Value::Bool(false)).Truthy();
  const Value attribute = Arg(args, 1, "attribute", Value::MakeNone());
  absl::StatusOr<std::vector<Value>> keys = SortKeys(*items, attribute, case_sensitive);
  if (!keys.ok()) return keys.status();
  size_t best = 0;
  for (size_t i = 1; i < keys->size(); ++i) {
    absl::StatusOr<bool> better =
        max ? LessThan((*keys)[best], (*keys)[i]) : LessThan((*keys)[i], (*keys)[best]);
    if (!better.ok()) return better.status();
    if (*better) best = i;
  }
  return (*items)[best];
}

absl::StatusOr<Value> Unique(const Value& input, const CallArgs& args) {
  absl::StatusOr<std::vector<Value>> items = Iterate(input);
  if (!items.ok()) return items.status();
  const bool case_sensitive = Arg(args, 0, "case_sensitive", Value::Bool(false)).Truthy();
  const Value attribute = Arg(args, 1, "attribute", Value::MakeNone());
  absl::StatusOr<std::vector<Value>> keys = SortKeys(*items, attribute, case_sensitive);
  if (!keys.ok()) return keys.status();
  List out;
  // Strings and numbers by hash (1 and 1.0 and True are one key, as in Python); other values
  // by comparison.
  absl::flat_hash_set<std::string> seen_hashable;
  std::vector<Value> seen_other;
  for (size_t i = 0; i < items->size(); ++i) {
    const Value& key = (*keys)[i];
    bool fresh = true;
    if (key.is_string()) {
      fresh = seen_hashable.insert(absl::StrCat("s", key.str())).second;
    } else if (key.is_number() || key.is_bool()) {
      fresh = seen_hashable.insert(absl::StrCat("n", PyFloatRepr(key.as_double()))).second;
    } else if (std::any_of(seen_other.begin(), seen_other.end(),
                           [&](const Value& v) { return v.Equals(key); })) {
      fresh = false;
    } else {
      seen_other.push_back(key);
    }
    if (fresh) out.push_back((*items)[i]);
  }
  return Value::MakeGenerator(std::move(out));
}

absl::StatusOr<Value> Round(const Value& input, const CallArgs& args) {
  if (!input.is_number() && !input.is_bool()) return TypeError("round needs a number");
  const Value precision_value = Arg(args, 0, "precision", Value::Int(0));
  const Value method = Arg(args, 1, "method", Value::String("common"));
  if (!precision_value.is_int()) return TypeError("round precision must be an integer");
  const double scale = std::pow(10.0, static_cast<double>(precision_value.as_int()));
  const double value = input.as_double() * scale;
  double rounded = 0;
  if (method.is_string() && method.str() == "ceil") {
    rounded = std::ceil(value);
  } else if (method.is_string() && method.str() == "floor") {
    rounded = std::floor(value);
  } else if (method.is_string() && method.str() == "common") {
    rounded = std::nearbyint(value);  // Python's round(): half to even
  } else {
    return TypeError("round method must be common, ceil or floor");
  }
  return Value::Float(rounded / scale);
}

// The "length" filters.
absl::StatusOr<Value> LengthFilter(absl::string_view name, const Value& input, CallArgs& args,
                                   Interpreter& interpreter) {
  switch (input.kind()) {
    case Value::Kind::kString:
      return Value::Int(static_cast<int64_t>(CodePointCount(input.str())));
    case Value::Kind::kList:
      if (input.is_generator()) return TypeError("object of type 'generator' has no len()");
      return Value::Int(static_cast<int64_t>(input.list().size()));
    case Value::Kind::kDict:
      return Value::Int(static_cast<int64_t>(input.dict().size()));
    case Value::Kind::kUndefined:
      return Value::Int(0);
    default:
      return TypeError(absl::StrCat("object of type '", input.TypeName(), "' has no len()"));
  }
}

// The "default" filters.
absl::StatusOr<Value> DefaultFilter(absl::string_view name, const Value& input, CallArgs& args,
                                    Interpreter& interpreter) {
  if (absl::Status s = CheckArgs(args, 2, {"default_value", "boolean"}, "default"); !s.ok()) {
    return s;
  }
  const bool boolean = Arg(args, 1, "boolean", Value::Bool(false)).Truthy();
  if (input.is_undefined() || (boolean && !input.Truthy())) {
    return Arg(args, 0, "default_value", Value::String(""));
  }
  return input;
}

// The "trim" filter.
absl::StatusOr<Value> TrimFilter(absl::string_view name, const Value& input, CallArgs& args,
                                 Interpreter& interpreter) {
  const Value text = Value::String(ToText(input));
  std::optional<std::string> chars;
  if (const Value c = Arg(args, 0, "chars"); c.is_string()) chars = c.str();
  const auto [begin, end] = PyStripRange(text.str(), chars, true, true);
  return Substring(text, begin, end);
}

// The "e" filters.
absl::StatusOr<Value> EscapeFilter(absl::string_view name, const Value& input, CallArgs& args,
                                   Interpreter& interpreter) {
  if (input.is_markup() && name != "forceescape") return input;
  return Value::Markup(DerivedString(HtmlEscape(PyStr(input)), {&input}).tainted_str());
}

// The "replace" filter.
absl::StatusOr<Value> ReplaceFilter(absl::string_view name, const Value& input, CallArgs& args,
                                    Interpreter& interpreter) {
  CallArgs method_args;
  method_args.positional = {Arg(args, 0, "old"), Arg(args, 1, "new")};
  const Value count = Arg(args, 2, "count", Value::MakeNone());
  if (!count.is_none()) method_args.positional.push_back(count);
  const Value text = Value::String(ToText(input));
  return interpreter.Call(BoundMethod(text, "replace"), method_args);
}

// The "items" filter.
absl::StatusOr<Value> ItemsFilter(absl::string_view name, const Value& input, CallArgs& args,
                                  Interpreter& interpreter) {
  if (input.is_undefined()) return Value::MakeList({});
  if (!input.is_dict()) return TypeError("items needs a mapping");
  List out;
  for (const auto& [key, value] : input.dict().entries()) {
    out.push_back(Value::MakeTuple({key, value}));
  }
  return Value::MakeList(std::move(out));
}

// The "list" filter.
absl::StatusOr<Value> ToListFilter(absl::string_view name, const Value& input, CallArgs& args,
                                   Interpreter& interpreter) {
  absl::StatusOr<std::vector<Value>> items = Iterate(input);
  if (!items.ok()) return items.status();
  return Value::MakeList(*std::move(items));
}

// The "first" filters.
absl::StatusOr<Value> FirstOrLastFilter(absl::string_view name, const Value& input, CallArgs& args,
                                        Interpreter& interpreter) {
  absl::StatusOr<std::vector<Value>> items = Iterate(input);
  if (!items.ok()) return items.status();
  if (items->empty())
    return Value::MakeUndefined(absl::StrCat("No ", name, " item, sequence was empty."));
  return name == "first" ? items->front() : items->back();
}

// The "reverse" filter.
absl::StatusOr<Value> ReverseFilter(absl::string_view name, const Value& input, CallArgs& args,
                                    Interpreter& interpreter) {
  if (input.is_string()) {
    return GetSlice(input, Value::MakeNone(), Value::MakeNone(), Value::Int(-1));
  }
  absl::StatusOr<std::vector<Value>> items = Iterate(input);
  if (!items.ok()) return items.status();
  std::reverse(items->begin(), items->end());
  return Value::MakeGenerator(*std::move(items));  // Python's reversed() iterator
}

// The "attr" filter.
absl::StatusOr<Value> AttrFilter(absl::string_view name, const Value& input, CallArgs& args,
                                 Interpreter& interpreter) {
  const Value attribute = Arg(args, 0, "name");
  if (!attribute.is_string()) return TypeError("attr needs an attribute name");
  return GetAttribute(input, attribute.str());
}

// The "abs" filter.
absl::StatusOr<Value> AbsFilter(absl::string_view name, const Value& input, CallArgs& args,
                                Interpreter& interpreter) {
  if (input.is_int()) return Value::Int(input.as_int() < 0 ? -input.as_int() : input.as_int());
  if (input.is_float()) return Value::Float(std::fabs(input.as_float()));
  return TypeError(absl::StrCat("bad operand type for abs(): '", input.TypeName(), "'"));
}

// The "sum" filter.
absl::StatusOr<Value> SumFilter(absl::string_view name, const Value& input, CallArgs& args,
                                Interpreter& interpreter) {
  absl::StatusOr<std::vector<Value>> items = Iterate(input);
  if (!items.ok()) return items.status();
  const Value attribute = Arg(args, 0, "attribute", Value::MakeNone());
  Value total = Arg(args, 1, "start", Value::Int(0));
  for (const Value& item : *items) {
    Value term = item;
    if (!attribute.is_none()) {
      absl::StatusOr<Value> got = GetPath(item, attribute);
      if (!got.ok()) return got.status();
      term = *std::move(got);
    }
    absl::StatusOr<Value> next = BinaryOp("+", total, term, interpreter);
    if (!next.ok()) return next.status();
    total = *std::move(next);
  }
  return total;
}

// The "wordcount" filter.
absl::StatusOr<Value> WordCountFilter(absl::string_view name, const Value& input, CallArgs& args,
                                      Interpreter& interpreter) {
  CallArgs none;
  absl::StatusOr<Value> words =
      interpreter.Call(BoundMethod(Value::String(PyStr(input)), "split"), none);
  if (!words.ok()) return words.status();
  return Value::Int(static_cast<int64_t>(words->list().size()));
}

// The "center" filter.
absl::StatusOr<Value> CenterFilter(absl::string_view name, const Value& input, CallArgs& args,
                                   Interpreter& interpreter) {
  const Value width = Arg(args, 0, "width", Value::Int(80));
  if (!width.is_int()) return TypeError("center width must be an integer");
  const std::string text = PyStr(input);
  const int64_t length = static_cast<int64_t>(CodePointCount(text));
  if (width.as_int() <= length || width.as_int() > 4096)
    return input.is_string() ? input : Value::String(text);
  const int64_t pad = width.as_int() - length;
  // Python puts the extra space on the left when the text length is odd.
  const int64_t left = pad / 2 + (pad & length & 1);
  return DerivedString(std::string(left, ' ') + text + std::string(pad - left, ' '), {&input});
}

}  // namespace

absl::StatusOr<Value> ApplyFilter(absl::string_view name, const Value& input, CallArgs& args,
                                  Interpreter& interpreter) {
  if (name == "tojson") return ToJson(input, args);
  if (name == "length" || name == "count") return LengthFilter(name, input, args, interpreter);
  if (name == "default" || name == "d") return DefaultFilter(name, input, args, interpreter);
  if (name == "trim") return TrimFilter(name, input, args, interpreter);
  if (name == "string") return Value::String(ToText(input));
  if (name == "safe") return Value::Markup(ToText(input));
  if (name == "e" || name == "escape" || name == "forceescape")
    return EscapeFilter(name, input, args, interpreter);
  if (name == "upper") return DerivedString(PyUpper(PyStr(input)), {&input});
  if (name == "lower") return DerivedString(PyLower(PyStr(input)), {&input});
  if (name == "title") return DerivedString(PyTitle(PyStr(input)), {&input});
  if (name == "capitalize") return DerivedString(PyCapitalize(PyStr(input)), {&input});
  if (name == "replace") return ReplaceFilter(name, input, args, interpreter);
  if (name == "join") return Join(input, args, interpreter);
  if (name == "items") return ItemsFilter(name, input, args, interpreter);
  if (name == "list") return ToListFilter(name, input, args, interpreter);
  if (name == "last" && input.is_generator()) {
    return TypeError("'generator' object is not reversible");
  }
  if (name == "first" || name == "last") return FirstOrLastFilter(name, input, args, interpreter);
  if (name == "reverse") return ReverseFilter(name, input, args, interpreter);
  if (name == "sort") return Sort(input, args);
  if (name == "dictsort") return DictSort(input, args);
  if (name == "unique") return Unique(input, args);
  if (name == "min" || name == "max") return MinMax(input, args, name == "max");
  if (name == "select" || name == "reject") {
    return Select(input, args, name == "select", /*by_attribute=*/false, interpreter);
  }
  if (name == "selectattr" || name == "rejectattr") {
    return Select(input, args, name == "selectattr", /*by_attribute=*/true, interpreter);
  }
  if (name == "map") return Map(input, args, interpreter);
  if (name == "attr") return AttrFilter(name, input, args, interpreter);
  if (name == "indent") return Indent(input, args);
  if (name == "int") return ToInt(input, args);
  if (name == "float") return ToFloat(input, args);
  if (name == "abs") return AbsFilter(name, input, args, interpreter);
  if (name == "round") return Round(input, args);
  if (name == "sum") return SumFilter(name, input, args, interpreter);
  if (name == "wordcount") return WordCountFilter(name, input, args, interpreter);
  if (name == "center") return CenterFilter(name, input, args, interpreter);
  return TypeError(absl::StrCat("no filter named '", name, "'"));
}

}  // namespace textgen::model::jinja
