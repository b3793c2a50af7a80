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

// A call's arguments as the model would have written them: a JSON string holding an object
// becomes that object; anything else stays as it is.
Value ArgumentsValue(const Value& arguments) {
  if (!arguments.is_string()) return arguments;
  absl::StatusOr<Value> parsed = ParseJsonValue(arguments.str(), /*tainted=*/true, "arguments");
  return parsed.ok() ? *std::move(parsed) : arguments;
}

// One call in the format's own key order: {"name": ..., "arguments": ...[, "id": ...]}.
absl::StatusOr<std::string> CallJson(const Value& call, const ToolCallMarkup& markup,
                                     size_t index) {
  const std::string where = absl::StrCat("tool_calls[", index, "]");
  if (!call.is_dict()) return absl::InvalidArgumentError(where + " must be an object");
  const Value* function = call.dict().Find("function");
  const Value& body = function != nullptr && function->is_dict() ? *function : call;
  const Value* name = body.dict().Find("name");
  if (name == nullptr || !name->is_string()) {
    return absl::InvalidArgumentError(where + " has no function name");
  }
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

}  // namespace

TemplateToolSupport DetectTemplateToolSupport(std::string_view source) {
  TemplateToolSupport support;
  support.reads_tool_calls = Has(source, "tool_calls");
  const bool reads_message_tools = Has(source, "message['tools']") ||
                                   Has(source, "message[\"tools\"]") ||
                                   Has(source, "message.tools");
  support.tools_in_system_message = reads_message_tools && !NamesToolsVariable(source);
  return support;
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
