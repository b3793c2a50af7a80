#include "model/chat/tool_polyfill.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "model/chat/jinja/python_text.h"
#include "model/chat/json_value.h"

namespace textgen::model {
namespace {

using jinja::Value;

bool Has(std::string_view text, std::string_view marker) {
  return text.find(marker) != std::string_view::npos;
}

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `source` names the variable `tools` anywhere: an occurrence that is not part of a
// longer name, a quoted key ('tools') or an attribute (message.tools). Text that mentions
// "tools" in prose counts too: a false positive only leaves the template as it is.
bool NamesToolsVariable(std::string_view source) {
  constexpr std::string_view kWord = "tools";
  for (size_t at = source.find(kWord); at != std::string_view::npos;
       at = source.find(kWord, at + 1)) {
    const char before = at > 0 ? source[at - 1] : ' ';
    const size_t end = at + kWord.size();
    const char after = end < source.size() ? source[end] : ' ';
    if (IsNameChar(before) || before == '\'' || before == '"' || before == '.') continue;
    if (IsNameChar(after) || after == '\'' || after == '"') continue;
    return true;
  }
  return false;
}

// Whether `source` applies `filter` to a call's arguments ("arguments | tojson", spaces or not).
bool FiltersArguments(std::string_view source, std::string_view filter) {
  constexpr std::string_view kWord = "arguments";
  for (size_t at = source.find(kWord); at != std::string_view::npos;
       at = source.find(kWord, at + 1)) {
    size_t i = at + kWord.size();
    while (i < source.size() && source[i] == ' ') ++i;
    if (i >= source.size() || source[i] != '|') continue;
    ++i;
    while (i < source.size() && source[i] == ' ') ++i;
    if (source.substr(i, filter.size()) == filter) return true;
  }
  return false;
}

// A call's arguments as the model would have written them: a JSON string holding an object
// becomes that object; anything else stays as it is.
Value ArgumentsValue(const Value& arguments) {
  if (!arguments.is_string()) return arguments;
  absl::StatusOr<Value> parsed = ParseJsonValue(arguments.str(), /*tainted=*/true, "arguments");
  return parsed.ok() ? *std::move(parsed) : arguments;
}

// The object of a call that names its function (OpenAI's {"function": {...}}, or the call
// itself).
absl::StatusOr<const Value*> CallBody(const Value& call, size_t index) {
  const std::string where = absl::StrCat("tool_calls[", index, "]");
  if (!call.is_dict()) return absl::InvalidArgumentError(where + " must be an object");
  const Value* function = call.dict().Find("function");
  const Value& body = function != nullptr && function->is_dict() ? *function : call;
  const Value* name = body.dict().Find("name");
  if (name == nullptr || !name->is_string()) {
    return absl::InvalidArgumentError(where + " has no function name");
  }
  return &body;
}

// One call in the format's own key order: {"name": ..., "arguments": ...[, "id": ...]}.
absl::StatusOr<std::string> CallJson(const Value& call, const ToolCallMarkup& markup,
                                     size_t index) {
  absl::StatusOr<const Value*> found = CallBody(call, index);
  if (!found.ok()) return found.status();
  const Value& body = **found;
  const Value* name = body.dict().Find("name");
  jinja::Dict out;
  out.Set(Value::String("name"), *name);
  const Value* arguments = body.dict().Find("arguments");
  out.Set(Value::String(markup.arguments_key),
          arguments != nullptr ? ArgumentsValue(*arguments) : Value::MakeDict(jinja::Dict()));
  if (markup.id_in_call) {
    if (const Value* id = call.dict().Find("id"); id != nullptr && id->is_string()) {
      out.Set(Value::String("id"), *id);
    }
  }
  return jinja::PyJsonDumps(Value::MakeDict(std::move(out)), {});
}

void AppendTrusted(jinja::TaintedString& out, std::string_view text) { out.bytes.append(text); }

void AppendTainted(jinja::TaintedString& out, std::string_view text);

// One call in qwen3-coder's XML: <tool_call>\n<function=NAME>\n, a <parameter=KEY> block per
// argument (text as it is, other values as JSON), </function>\n</tool_call>.
absl::Status AppendXmlCall(const Value& call, size_t index, jinja::TaintedString& out) {
  absl::StatusOr<const Value*> found = CallBody(call, index);
  if (!found.ok()) return found.status();
  const Value& body = **found;
  const Value* name = body.dict().Find("name");
  AppendTrusted(out, "<tool_call>\n");
  AppendTrusted(out, XmlCallTags::kFunctionOpen);
  AppendTainted(out, name->str());
  AppendTrusted(out, ">\n");
  const Value* arguments = body.dict().Find("arguments");
  const Value parsed = arguments != nullptr ? ArgumentsValue(*arguments) : Value();
  if (parsed.is_dict()) {
    for (const auto& [key, value] : parsed.dict().entries()) {
      if (!key.is_string()) continue;
      AppendTrusted(out, XmlCallTags::kParameterOpen);
      AppendTainted(out, key.str());
      AppendTrusted(out, ">\n");
      if (value.is_string()) {
        AppendTainted(out, value.str());
      } else {
        absl::StatusOr<std::string> json = jinja::PyJsonDumps(value, {});
        if (!json.ok()) return json.status();
        AppendTainted(out, *json);
      }
      AppendTrusted(out, "\n");
      AppendTrusted(out, XmlCallTags::kParameterClose);
      AppendTrusted(out, "\n");
    }
  }
  AppendTrusted(out, XmlCallTags::kFunctionClose);
  AppendTrusted(out, "\n</tool_call>");
  return absl::OkStatus();
}

void AppendTainted(jinja::TaintedString& out, std::string_view text) {
  if (text.empty()) return;
  const size_t begin = out.bytes.size();
  out.bytes.append(text);
  if (!out.taint.empty() && out.taint.back().end == begin) {
    out.taint.back().end = out.bytes.size();
  } else {
    out.taint.push_back({begin, out.bytes.size()});
  }
}

// One call as LFM2 writes it: NAME(KEY=VALUE, ...), strings in single quotes (as LFM2.5's
// template writes them, with Python's escapes), True / False / None, other values as JSON.
absl::Status AppendPythonCall(const Value& call, size_t index, jinja::TaintedString& out) {
  absl::StatusOr<const Value*> found = CallBody(call, index);
  if (!found.ok()) return found.status();
  const Value& body = **found;
  AppendTainted(out, body.dict().Find("name")->str());
  AppendTrusted(out, "(");
  const Value* arguments = body.dict().Find("arguments");
  const Value parsed = arguments != nullptr ? ArgumentsValue(*arguments) : Value();
  if (parsed.is_dict()) {
    bool first = true;
    for (const auto& [key, value] : parsed.dict().entries()) {
      if (!key.is_string()) continue;
      if (!first) AppendTrusted(out, ", ");
      first = false;
      AppendTainted(out, key.str());
      AppendTrusted(out, "=");
      std::string text;
      if (value.is_string()) {
        text += '\'';
        for (const char c : value.str()) {
          if (c == '\'' || c == '\\') text += '\\';
          if (c == '\n') {
            text += "\\n";
            continue;
          }
          text += c;
        }
        text += '\'';
      } else if (value.is_bool()) {
        text = value.as_bool() ? "True" : "False";
      } else if (value.is_none()) {
        text = "None";
      } else {
        absl::StatusOr<std::string> json = jinja::PyJsonDumps(value, {});
        if (!json.ok()) return json.status();
        text = *std::move(json);
      }
      AppendTainted(out, text);
    }
  }
  AppendTrusted(out, ")");
  return absl::OkStatus();
}

}  // namespace

TemplateToolSupport DetectTemplateToolSupport(std::string_view source) {
  TemplateToolSupport support;
  support.reads_tool_calls = Has(source, "tool_calls");
  const bool reads_message_tools = Has(source, "message['tools']") ||
                                   Has(source, "message[\"tools\"]") ||
                                   Has(source, "message.tools");
  support.tools_in_system_message = reads_message_tools && !NamesToolsVariable(source);
  // LFM2.5's template takes ["arguments"] into a variable and calls .items() on it.
  support.reads_object_arguments = FiltersArguments(source, "items") ||
                                   FiltersArguments(source, "tojson") ||
                                   (Has(source, "[\"arguments\"]") && Has(source, ".items()"));
  return support;
}

Value WithObjectArguments(const Value& calls) {
  if (!calls.is_list()) return calls;
  jinja::List out;
  for (const Value& call : calls.list()) {
    const Value* function = call.is_dict() ? call.dict().Find("function") : nullptr;
    const Value* arguments =
        function != nullptr && function->is_dict() ? function->dict().Find("arguments") : nullptr;
    if (arguments == nullptr || !arguments->is_string()) {
      out.push_back(call);
      continue;
    }
    Value parsed = ArgumentsValue(*arguments);
    if (!parsed.is_dict()) {
      out.push_back(call);
      continue;
    }
    jinja::Dict new_function = function->dict();
    new_function.Set(Value::String("arguments"), std::move(parsed));
    jinja::Dict new_call = call.dict();
    new_call.Set(Value::String("function"), Value::MakeDict(std::move(new_function)));
    out.push_back(Value::MakeDict(std::move(new_call)));
  }
  return Value::MakeList(std::move(out));
}

absl::StatusOr<std::string> ToolsAsSystemText(const jinja::Value& tools) {
  if (!tools.is_list()) return absl::InvalidArgumentError("tools must be a JSON array");
  jinja::List functions;
  for (const Value& tool : tools.list()) {
    const Value* function = tool.is_dict() ? tool.dict().Find("function") : nullptr;
    functions.push_back(function != nullptr ? *function : tool);
  }
  return jinja::PyJsonDumps(Value::MakeList(std::move(functions)), {});
}

absl::StatusOr<jinja::TaintedString> ContentWithCalls(std::string_view content,
                                                      const jinja::Value& calls,
                                                      ToolCallFormat format) {
  if (!calls.is_list()) return absl::InvalidArgumentError("tool_calls must be a JSON array");
  const ToolCallMarkup markup = MarkupOf(format);
  if (markup.python_calls) {  // one list of Python calls between the tags
    jinja::TaintedString out;
    AppendTainted(out, content);
    if (calls.list().empty()) return out;
    AppendTrusted(out, markup.array_open);
    AppendTrusted(out, "[");
    for (size_t i = 0; i < calls.list().size(); ++i) {
      if (i > 0) AppendTrusted(out, ", ");
      if (absl::Status s = AppendPythonCall(calls.list()[i], i, out); !s.ok()) return s;
    }
    AppendTrusted(out, "]");
    AppendTrusted(out, markup.array_close);
    return out;
  }
  if (markup.xml_parameters) {
    jinja::TaintedString out;
    AppendTainted(out, content);
    for (size_t i = 0; i < calls.list().size(); ++i) {
      if (i > 0 || !content.empty()) AppendTrusted(out, "\n");
      if (absl::Status s = AppendXmlCall(calls.list()[i], i, out); !s.ok()) return s;
    }
    return out;
  }
  std::vector<std::string> texts;
  for (size_t i = 0; i < calls.list().size(); ++i) {
    absl::StatusOr<std::string> text = CallJson(calls.list()[i], markup, i);
    if (!text.ok()) return text.status();
    texts.push_back(*std::move(text));
  }
  jinja::TaintedString out;
  AppendTainted(out, content);
  if (texts.empty()) return out;
  if (!markup.call_open.empty()) {  // each call in its own tags
    for (size_t i = 0; i < texts.size(); ++i) {
      if (i > 0) AppendTrusted(out, "\n");
      AppendTrusted(out, markup.call_open);
      AppendTainted(out, texts[i]);
      AppendTrusted(out, markup.call_close);
    }
    return out;
  }
  const bool as_array = markup.array || texts.size() > 1;
  AppendTrusted(out, markup.array_open);
  if (as_array) AppendTrusted(out, "[");
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i > 0) AppendTrusted(out, ", ");
    AppendTainted(out, texts[i]);
  }
  if (as_array) AppendTrusted(out, "]");
  AppendTrusted(out, markup.array_close);
  return out;
}

}  // namespace textgen::model
