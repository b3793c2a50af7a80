// Methods of Python's str, dict and list that templates call ("a".split(), d.get(k)).
// Mutating methods are refused, as in Hugging Face's ImmutableSandboxedEnvironment.
#include <algorithm>
#include <array>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/chat/jinja/call_args.h"
#include "model/chat/jinja/interpreter.h"
#include "model/chat/jinja/operators.h"
#include "model/chat/jinja/python_text.h"

namespace textgen::model::jinja {
namespace {

constexpr std::array kStringMethods = {
    "split",   "rsplit",  "strip",   "lstrip",     "rstrip",     "startswith", "endswith",
    "replace", "upper",   "lower",   "title",      "capitalize", "find",       "rfind",
    "count",   "format",  "join",    "splitlines", "isdigit",    "isalpha",    "isalnum",
    "isspace", "isupper", "islower", "index",      "partition",  "rpartition"};
constexpr std::array kDictMethods = {"get", "items", "keys", "values", "copy"};
constexpr std::array kListMethods = {"index", "count", "copy"};
// Present in Python, refused by the immutable sandbox.
constexpr std::array kMutatingMethods = {"append",  "pop",  "extend", "insert", "remove",
                                         "reverse", "sort", "clear",  "update", "setdefault",
                                         "popitem", "add",  "discard"};

template <size_t N>
bool OneOf(const std::array<const char*, N>& names, absl::string_view name) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

absl::StatusOr<std::string> StringArg(const Value& value, absl::string_view method) {
  if (!value.is_string()) {
    return TypeError(absl::StrCat(method, "() argument must be str, not ", value.TypeName()));
  }
  return value.str();
}

// Byte offset -> code point index (Python reports positions in code points).
int64_t CodePointIndex(absl::string_view text, size_t byte_offset) {
  return static_cast<int64_t>(CodePointCount(text.substr(0, byte_offset)));
}

absl::StatusOr<Value> Split(const Value& self, const CallArgs& args, bool from_right) {
  const absl::string_view method = from_right ? "rsplit" : "split";
  TEXTGEN_RETURN_IF_ERROR(CheckArgs(args, 2, {"sep", "maxsplit"}, method));
  const Value sep = Arg(args, 0, "sep", Value::MakeNone());
  const Value max_value = Arg(args, 1, "maxsplit", Value::Int(-1));
  if (!max_value.is_int()) return TypeError("maxsplit must be an integer");
  int64_t max_split = max_value.as_int();
  const std::string& text = self.str();
  std::vector<std::pair<size_t, size_t>> parts;  // byte ranges
  if (sep.is_none()) {
    // Runs of whitespace separate; leading/trailing whitespace yields no empty parts.
    std::vector<std::pair<size_t, size_t>> words;
    size_t offset = 0;
    while (offset < text.size()) {
      size_t next = offset;
      if (IsPySpace(DecodeCodePoint(text, &next))) {
        offset = next;
        continue;
      }
      const size_t begin = offset;
      while (offset < text.size()) {
        size_t after = offset;
        if (IsPySpace(DecodeCodePoint(text, &after))) break;
        offset = after;
      }
      words.emplace_back(begin, offset);
    }
    if (max_split < 0 || static_cast<size_t>(max_split) + 1 >= words.size()) {
      parts = std::move(words);
    } else if (!from_right) {
      // The remainder keeps its inner and trailing whitespace.
      for (int64_t i = 0; i < max_split; ++i) parts.push_back(words[i]);
      parts.emplace_back(words[max_split].first, text.size());  // keeps trailing space
    } else {
      // The remainder keeps its leading whitespace.
      const size_t keep = words.size() - static_cast<size_t>(max_split);
      parts.emplace_back(0, words[keep - 1].second);  // keeps leading space
      for (size_t i = keep; i < words.size(); ++i) parts.push_back(words[i]);
    }
  } else {
    absl::StatusOr<std::string> separator = StringArg(sep, method);
    if (!separator.ok()) return separator.status();
    if (separator->empty()) return TypeError("empty separator");
    if (!from_right) {
      size_t begin = 0;
      for (size_t at; (max_split < 0 || max_split-- > 0) &&
                      (at = text.find(*separator, begin)) != std::string::npos;) {
        parts.emplace_back(begin, at);
        begin = at + separator->size();
      }
      parts.emplace_back(begin, text.size());
    } else {
      size_t end = text.size();
      std::vector<std::pair<size_t, size_t>> reversed;
      while (max_split < 0 || max_split-- > 0) {
        if (end < separator->size()) break;
        const size_t at = text.rfind(*separator, end - separator->size());
        if (at == std::string::npos) break;
        reversed.emplace_back(at + separator->size(), end);
        end = at;
      }
      reversed.emplace_back(0, end);
      parts.assign(reversed.rbegin(), reversed.rend());
    }
  }
  List out;
  for (auto [b, e] : parts) out.push_back(Substring(self, b, e));
  return Value::MakeList(std::move(out));
}

absl::StatusOr<Value> Strip(const Value& self, const CallArgs& args, bool left, bool right,
                            absl::string_view method) {
  TEXTGEN_RETURN_IF_ERROR(CheckArgs(args, 1, {}, method));
  std::optional<std::string> chars;
  const Value arg = Arg(args, 0, "");
  if (!arg.is_none() && !arg.is_undefined()) {
    absl::StatusOr<std::string> text = StringArg(arg, method);
    if (!text.ok()) return text.status();
    chars = *text;
  }
  const auto [begin, end] = PyStripRange(self.str(), chars, left, right);
  return Substring(self, begin, end);
}

absl::StatusOr<Value> AffixTest(const Value& self, const CallArgs& args, bool prefix) {
  const absl::string_view method = prefix ? "startswith" : "endswith";
  TEXTGEN_RETURN_IF_ERROR(CheckArgs(args, 1, {}, method));
  const Value arg = Arg(args, 0, "");
  std::vector<Value> candidates;
  if (arg.is_list()) {
    candidates = arg.list();
  } else {
    candidates.push_back(arg);
  }
  const std::string& text = self.str();
  for (const Value& candidate : candidates) {
    absl::StatusOr<std::string> affix = StringArg(candidate, method);
    if (!affix.ok()) return affix.status();
    const bool match =
        affix->size() <= text.size() &&
        (prefix ? text.compare(0, affix->size(), *affix) == 0
                : text.compare(text.size() - affix->size(), affix->size(), *affix) == 0);
    if (match) return Value::Bool(true);
  }
  return Value::Bool(false);
}

// str.format with "{}", "{0}", "{name}" fields and "{{"/"}}" escapes (no format specs).
absl::StatusOr<Value> Format(const Value& self, const CallArgs& args, Interpreter& interpreter) {
  const std::string& pattern = self.str();
  TaintedString out;
  size_t auto_index = 0;
  std::vector<const Value*> inputs = {&self};
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '}') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '}')
        ++i;
      else
        return TypeError("Single '}' encountered in format string");
      out.bytes.push_back('}');
      continue;
    }
    if (c != '{') {
      out.bytes.push_back(c);
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out.bytes.push_back('{');
      ++i;
      continue;
    }
    const size_t close = pattern.find('}', i);
    if (close == std::string::npos) return TypeError("Single '{' encountered in format string");
    const std::string field = pattern.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos) {
      return TypeError(absl::StrCat("format field '{", field,
                                    "}': conversions and format specs "
                                    "are not supported"));
    }
    Value value;
    if (field.empty()) {
      if (auto_index >= args.positional.size()) {
        return TypeError("Replacement index out of range for positional args tuple");
      }
      value = args.positional[auto_index++];
    } else if (std::all_of(field.begin(), field.end(),
                           [](char d) { return d >= '0' && d <= '9'; })) {
      // A digit string too long for size_t is out of range too (no exception: fuzz-found).
      size_t index = 0;
      if (!absl::SimpleAtoi(field, &index) || index >= args.positional.size()) {
        return TypeError("Replacement index out of range for positional args tuple");
      }
      value = args.positional[index];
    } else {
      bool found = false;
      for (const auto& [key, v] : args.keyword) {
        if (key == field) {
          value = v;
          found = true;
        }
      }
      if (!found) return TypeError(absl::StrCat("format: no argument named '", field, "'"));
    }
    AppendText(ToText(value), &out);
    i = close;
  }
  TEXTGEN_RETURN_IF_ERROR(interpreter.Charge(out.bytes.size()));
  // Taint is kept for substituted values; the pattern's own bytes are the template's or were
  // tainted as a whole below.
  if (self.tainted_str().tainted()) return Value::Tainted(std::move(out.bytes));
  return Value::String(std::move(out));
}

absl::StatusOr<Value> Find(const Value& self, const CallArgs& args, absl::string_view method) {
  TEXTGEN_RETURN_IF_ERROR(CheckArgs(args, 1, {}, method));
  absl::StatusOr<std::string> needle = StringArg(Arg(args, 0, ""), method);
  if (!needle.ok()) return needle.status();
  const std::string& text = self.str();
  if (method == "count") {
    if (needle->empty()) return Value::Int(static_cast<int64_t>(CodePointCount(text)) + 1);
    int64_t count = 0;
    for (size_t at = text.find(*needle); at != std::string::npos;
         at = text.find(*needle, at + needle->size())) {
      ++count;
    }
    return Value::Int(count);
  }
  const size_t at = method == "rfind" ? text.rfind(*needle) : text.find(*needle);
  if (at == std::string::npos) {
    if (method == "index") return TypeError("substring not found");
    return Value::Int(-1);
  }
  return Value::Int(CodePointIndex(text, at));
}

absl::StatusOr<Value> Partition(const Value& self, const CallArgs& args, bool from_right) {
  absl::StatusOr<std::string> sep = StringArg(Arg(args, 0, ""), "partition");
  if (!sep.ok()) return sep.status();
  if (sep->empty()) return TypeError("empty separator");
  const std::string& text = self.str();
  const size_t at = from_right ? text.rfind(*sep) : text.find(*sep);
  if (at == std::string::npos) {
    List parts = {Value::String(""), Value::String(""), self};
    if (!from_right) std::swap(parts[0], parts[2]);
    return Value::MakeTuple(std::move(parts));
  }
  return Value::MakeTuple({Substring(self, 0, at), Substring(self, at, at + sep->size()),
                           Substring(self, at + sep->size(), text.size())});
}

absl::StatusOr<Value> CharacterClass(const Value& self, absl::string_view method) {
  const std::string& text = self.str();
  if (text.empty()) return Value::Bool(false);
  if (method == "isupper" || method == "islower") {
    const bool upper = method == "isupper";
    const std::string same = upper ? PyUpper(text) : PyLower(text);
    const std::string other = upper ? PyLower(text) : PyUpper(text);
    return Value::Bool(same == text && other != text);
  }
  for (size_t offset = 0; offset < text.size();) {
    const char32_t c = DecodeCodePoint(text, &offset);
    const bool digit = c >= '0' && c <= '9';
    std::string character;
    AppendUtf8(c, &character);
    // Letters: ASCII, cased letters, and the CJK / kana blocks (approximates str.isalpha).
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= 0x80 && (PyUpper(character) != character || PyLower(character) != character)) ||
        (c >= 0x3040 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3);
    bool ok = false;
    if (method == "isdigit") ok = digit;
    if (method == "isalpha") ok = alpha;
    if (method == "isalnum") ok = alpha || digit;
    if (method == "isspace") ok = IsPySpace(c);
    if (!ok) return Value::Bool(false);
  }
  return Value::Bool(true);
}

absl::StatusOr<Value> CallStringMethod(const Value& self, absl::string_view name, CallArgs& args,
                                       Interpreter& interpreter) {
  if (name == "split" || name == "rsplit") return Split(self, args, name == "rsplit");
  if (name == "strip") return Strip(self, args, true, true, name);
  if (name == "lstrip") return Strip(self, args, true, false, name);
  if (name == "rstrip") return Strip(self, args, false, true, name);
  if (name == "startswith" || name == "endswith")
    return AffixTest(self, args, name == "startswith");
  if (name == "format") return Format(self, args, interpreter);
  if (name == "find" || name == "rfind" || name == "count" || name == "index") {
    return Find(self, args, name);
  }
  if (name == "partition" || name == "rpartition")
    return Partition(self, args, name == "rpartition");
  if (name == "upper") return DerivedString(PyUpper(self.str()), {&self});
  if (name == "lower") return DerivedString(PyLower(self.str()), {&self});
  if (name == "title") return DerivedString(PyTitle(self.str()), {&self});
  if (name == "capitalize") return DerivedString(PyCapitalize(self.str()), {&self});
  if (name == "replace") {
    TEXTGEN_RETURN_IF_ERROR(CheckArgs(args, 3, {}, name));
    absl::StatusOr<std::string> old_text = StringArg(Arg(args, 0, ""), name);
    if (!old_text.ok()) return old_text.status();
    absl::StatusOr<std::string> new_text = StringArg(Arg(args, 1, ""), name);
    if (!new_text.ok()) return new_text.status();
    const Value count_value = Arg(args, 2, "", Value::Int(-1));
    if (!count_value.is_int()) return TypeError("replace() count must be an integer");
    int64_t count = count_value.as_int();
    const std::string& text = self.str();
    std::string out;
    if (old_text->empty()) {
      // Python inserts the replacement between every character (and at both ends).
      const std::vector<size_t> starts = CodePointStarts(text);
      for (size_t k = 0; k <= starts.size(); ++k) {
        if (count >= 0 && static_cast<int64_t>(k) >= count) {
          out += text.substr(k < starts.size() ? starts[k] : text.size());
          break;
        }
        out += *new_text;
        if (k < starts.size()) {
          const size_t end = k + 1 < starts.size() ? starts[k + 1] : text.size();
          out += text.substr(starts[k], end - starts[k]);
        }
      }
    } else {
      size_t begin = 0;
      for (size_t at; count != 0 && (at = text.find(*old_text, begin)) != std::string::npos;
           --count) {
        out += text.substr(begin, at - begin);
        out += *new_text;
        begin = at + old_text->size();
        TEXTGEN_RETURN_IF_ERROR(interpreter.CheckBytes(out.size()));
      }
      out += text.substr(begin);
    }
    TEXTGEN_RETURN_IF_ERROR(interpreter.Charge(out.size()));
    const Value& new_value = Arg(args, 1, "");
    return DerivedString(std::move(out), {&self, &new_value});
  }
  if (name == "join") {
    absl::StatusOr<std::vector<Value>> items = Iterate(Arg(args, 0, ""));
    if (!items.ok()) return items.status();
    TaintedString out;
    for (size_t i = 0; i < items->size(); ++i) {
      if (!(*items)[i].is_string()) {
        return TypeError(absl::StrCat("sequence item ", i, ": expected str instance, ",
                                      (*items)[i].TypeName(), " found"));
      }
      if (i > 0) AppendText(self.tainted_str(), &out);
      AppendText((*items)[i].tainted_str(), &out);
      TEXTGEN_RETURN_IF_ERROR(interpreter.CheckBytes(out.bytes.size()));
    }
    TEXTGEN_RETURN_IF_ERROR(interpreter.Charge(out.bytes.size()));
    return Value::String(std::move(out));
  }
  if (name == "splitlines") {
    List lines;
    const std::string& text = self.str();
    size_t begin = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n' || text[i] == '\r') {
        lines.push_back(Substring(self, begin, i));
        if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
        begin = i + 1;
      }
    }
    if (begin < text.size()) lines.push_back(Substring(self, begin, text.size()));
    return Value::MakeList(std::move(lines));
  }
  return CharacterClass(self, name);
}

absl::StatusOr<Value> CallDictMethod(const Value& self, absl::string_view name, CallArgs& args) {
  const Dict& dict = self.dict();
  if (name == "get") {
    TEXTGEN_RETURN_IF_ERROR(CheckArgs(args, 2, {}, name));
    if (args.positional.empty()) return TypeError("get expected at least 1 argument, got 0");
    if (const Value* found = dict.Find(args.positional[0])) return *found;
    return Arg(args, 1, "", Value::MakeNone());
  }
  TEXTGEN_RETURN_IF_ERROR(CheckArgs(args, 0, {}, name));
  if (name == "copy") return Value::MakeDict(dict);
  List out;
  for (const auto& [key, value] : dict.entries()) {
    if (name == "items") {
      out.push_back(Value::MakeTuple({key, value}));
    } else {
      out.push_back(name == "keys" ? key : value);
    }
  }
  return Value::MakeList(std::move(out));
}

absl::StatusOr<Value> CallListMethod(const Value& self, absl::string_view name, CallArgs& args) {
  if (name == "copy") return Value::MakeList(self.list());
  TEXTGEN_RETURN_IF_ERROR(CheckArgs(args, 1, {}, name));
  const Value item = Arg(args, 0, "");
  const List& list = self.list();
  if (name == "count") {
    return Value::Int(
        std::count_if(list.begin(), list.end(), [&](const Value& v) { return v.Equals(item); }));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].Equals(item)) return Value::Int(static_cast<int64_t>(i));
  }
  return TypeError(absl::StrCat(PyRepr(item), " is not in list"));
}

}  // namespace

Value BoundMethod(const Value& object, absl::string_view name) {
  const bool known = (object.is_string() && OneOf(kStringMethods, name)) ||
                     (object.is_dict() && !object.is_namespace() && OneOf(kDictMethods, name)) ||
                     (object.is_list() && OneOf(kListMethods, name));
  if (!known) {
    if ((object.is_list() || (object.is_dict() && !object.is_namespace())) &&
        OneOf(kMutatingMethods, name)) {
      return Value::MakeUndefined(absl::StrCat("access to attribute '", name, "' of '",
                                               object.TypeName(),
                                               "' object is unsafe (templates cannot modify "
                                               "their inputs)"));
    }
    return Value();
  }
  std::string method(name);
  return Value::MakeCallable(Callable{
      method, [object, method](CallArgs& args, Interpreter& interpreter) -> absl::StatusOr<Value> {
        if (object.is_string()) return CallStringMethod(object, method, args, interpreter);
        if (object.is_dict()) return CallDictMethod(object, method, args);
        return CallListMethod(object, method, args);
      }});
}

}  // namespace textgen::model::jinja
