#include "server/core/tool_plan.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/chat/json_value.h"
#include "model/tokenizer/utf8.h"
#include "nlohmann/json.hpp"
#include "server/core/harmony_framing.h"
#include "server/core/validation.h"

namespace textgen::server {
namespace {

using absl::StrCat;
using Ordered = nlohmann::ordered_json;

struct Tool {
  std::string name;
  Ordered parameters;  // an object schema
};

bool ValidToolName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// Also sets `template_tools` to the tools as the chat template sees them, from this parse.
absl::StatusOr<std::vector<Tool>> ReadTools(const Ordered& parsed,
                                            model::ConstraintCompiler* compiler,
                                            std::optional<model::jinja::Value>& template_tools) {
  std::vector<Tool> tools;
  if (!parsed.is_array()) return InvalidField("tools", "must be a JSON array of tools");
  if (parsed.size() > static_cast<size_t>(kMaxTools)) {
    return InvalidField(
        "tools", StrCat("has ", parsed.size(), " tools; at most ", kMaxTools, " are allowed"));
  }
  absl::StatusOr<model::jinja::Value> value = model::JsonToValue(parsed, /*tainted=*/true, "tools");
  if (!value.ok()) return WithField(value.status(), "tools");
  template_tools = *std::move(value);
  std::set<std::string> names;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const std::string field = StrCat("tools[", i, "]");
    const Ordered& tool = parsed[i];
    if (!tool.is_object()) return InvalidField(field, "must be an object");
    if (!tool.contains("type") || tool["type"] != "function") {
      return InvalidField(StrCat(field, ".type"),
                          "must be \"function\": textgen serves function tools only");
    }
    if (!tool.contains("function") || !tool["function"].is_object()) {
      return InvalidField(StrCat(field, ".function"), "must be an object with a name");
    }
    const Ordered& function = tool["function"];
    if (!function.contains("name") || !function["name"].is_string() ||
        !ValidToolName(function["name"].get<std::string>())) {
      return InvalidField(StrCat(field, ".function.name"),
                          "must be 1-64 letters, digits, underscores or dashes");
    }
    Tool out{function["name"].get<std::string>(), Ordered{{"type", "object"}}};
    if (!names.insert(out.name).second) {
      return InvalidField(StrCat(field, ".function.name"),
                          StrCat("\"", out.name, "\" names an earlier tool too"));
    }
    if (function.contains("parameters")) {
      const Ordered& parameters = function["parameters"];
      const std::string parameters_field = StrCat(field, ".function.parameters");
      if (!parameters.is_object())
        return InvalidField(parameters_field, "must be a JSON Schema object");
      if (compiler != nullptr) {
        absl::StatusOr<model::CompiledConstraint> compiled =
            compiler->Compile({model::ConstraintKind::kJsonSchema, parameters.dump(), {}});
        if (!compiled.ok()) {
          return FieldError(compiled.status().code(), parameters_field,
                            StrCat("is refused: ", model::SanitizeUtf8(std::string_view(
                                                       compiled.status().message().data(),
                                                       compiled.status().message().size()))));
        }
      }
      out.parameters = parameters;
    }
    tools.push_back(std::move(out));
  }
  return tools;
}

// Every call id the conversation's assistant messages made; a tool message must answer one.
absl::Status CheckToolMessages(const v1::ChatRequest& request) {
  std::set<std::string> call_ids;
  for (int i = 0; i < request.messages_size(); ++i) {
    const v1::ChatMessage& m = request.messages(i);
    const std::string field = StrCat("messages[", i, "]");
    if (!m.tool_calls_json().empty()) {
      const nlohmann::json calls = nlohmann::json::parse(m.tool_calls_json(), nullptr, false);
      if (calls.is_discarded() || !calls.is_array()) {
        return InvalidField(StrCat(field, ".tool_calls"), "must be a JSON array of calls");
      }
      for (const nlohmann::json& call : calls) {
        if (call.is_object() && call.contains("id") && call["id"].is_string()) {
          call_ids.insert(call["id"].get<std::string>());
        }
      }
    }
    if (m.role() == "tool") {
      if (m.tool_call_id().empty()) {
        return InvalidField(StrCat(field, ".tool_call_id"),
                            "is missing: a tool message answers one of the assistant's calls");
      }
      if (!call_ids.contains(m.tool_call_id())) {
        return InvalidField(StrCat(field, ".tool_call_id"),
                            StrCat("\"", model::SanitizeUtf8(m.tool_call_id().substr(0, 64)),
                                   "\" answers no earlier call of the assistant"));
      }
    }
  }
  return absl::OkStatus();
}

// Puts `tool`'s parameters under $defs (so their own "#..." references still resolve) and
// returns the reference to them.
std::string AddParameters(const Tool& tool, int index, Ordered& defs) {
  const std::string home = StrCat("#/$defs/tool", index);
  std::function<void(Ordered&)> rebase = [&](Ordered& node) {
    if (node.is_object()) {
      for (auto& [key, value] : node.items()) {
        if (key == "$ref" && value.is_string() && value.get<std::string>().starts_with("#")) {
          value = home + value.get<std::string>().substr(1);
        } else {
          rebase(value);
        }
      }
    } else if (node.is_array()) {
      for (Ordered& item : node) rebase(item);
    }
  };
  Ordered parameters = tool.parameters;
  rebase(parameters);
  defs[StrCat("tool", index)] = std::move(parameters);
  return home;
}

// One call of `tool` as a JSON Schema object: its name, then its arguments.
Ordered CallSchema(const Tool& tool, int index, const model::ToolCallMarkup& markup,
                   Ordered& defs) {
  const std::string home = AddParameters(tool, index, defs);
  Ordered properties = Ordered::object();
  properties["name"] = Ordered{{"const", tool.name}};
  properties[markup.arguments_key] = Ordered{{"$ref", home}};
  return Ordered{{"type", "object"},
                 {"properties", std::move(properties)},
                 {"required", Ordered::array({"name", markup.arguments_key})},
                 {"additionalProperties", false}};
}

// qwen3-coder's calls: "<function=NAME>\n" names the tool outside the arguments, which are
// its parameters' XML blocks (model::JsonFraming::Arguments::kXmlParameters), then "</function>".
model::ConstraintSpec XmlCallConstraint(const std::vector<Tool>& tools, int max_calls,
                                        bool after_open_tag) {
  Ordered defs = Ordered::object();
  Ordered branches = Ordered::array();
  model::JsonFraming framing;
  for (size_t i = 0; i < tools.size(); ++i) {
    branches.push_back(Ordered{{"$ref", AddParameters(tools[i], static_cast<int>(i), defs)}});
    framing.before_branch.push_back(
        StrCat(std::string(model::XmlCallTags::kFunctionOpen), tools[i].name, ">\n"));
  }
  framing.arguments = model::JsonFraming::Arguments::kXmlParameters;
  framing.max_documents = max_calls;
  framing.after = StrCat(std::string(model::XmlCallTags::kFunctionClose), "\n</tool_call>");
  if (after_open_tag) {
    // "<tool_call>" was written; later calls open their own.
    framing.before = "\n";
    framing.separator = "\n<tool_call>";
  } else {
    framing.before = "<tool_call>\n";
    framing.separator = "\n";
  }
  model::ConstraintSpec spec;
  spec.kind = model::ConstraintKind::kJsonSchema;
  spec.text = Ordered{{"anyOf", std::move(branches)}, {"$defs", std::move(defs)}}.dump();
  spec.framing = std::move(framing);
  return spec;
}

// LFM2's calls: "[NAME(KEY=VALUE, ...), ...]", the keyword arguments' values JSON (which its
// parsers read as llama.cpp's does). Its tags are control tokens: "<|tool_call_start|>" arms
// auto's grammar; a forced reply is the list alone.
model::ConstraintSpec PythonCallConstraint(const std::vector<Tool>& tools, int max_calls) {
  Ordered defs = Ordered::object();
  Ordered branches = Ordered::array();
  model::JsonFraming framing;
  for (size_t i = 0; i < tools.size(); ++i) {
    branches.push_back(Ordered{{"$ref", AddParameters(tools[i], static_cast<int>(i), defs)}});
    framing.before_branch.push_back(tools[i].name + "(");
  }
  framing.arguments = model::JsonFraming::Arguments::kPythonKeywords;
  framing.max_documents = max_calls;
  framing.after = ")";
  framing.separator = ", ";
  framing.open = "[";
  framing.close = "]";
  model::ConstraintSpec spec;
  spec.kind = model::ConstraintKind::kJsonSchema;
  spec.text = Ordered{{"anyOf", std::move(branches)}, {"$defs", std::move(defs)}}.dump();
  spec.framing = std::move(framing);
  return spec;
}

// The constraint of `max_calls` calls in `format`; `after_open_tag`: what follows the model's
// own opening tag (auto's lazy grammar).
model::ConstraintSpec CallConstraint(const std::vector<Tool>& tools, model::ToolCallFormat format,
                                     int max_calls, bool after_open_tag);

model::ConstraintSpec FormatCallConstraint(const std::vector<Tool>& tools,
                                           model::ToolCallFormat format, int max_calls,
                                           bool after_open_tag) {
  const model::ToolCallMarkup markup = model::MarkupOf(format);
  if (markup.xml_parameters) return XmlCallConstraint(tools, max_calls, after_open_tag);
  if (markup.python_calls) return PythonCallConstraint(tools, max_calls);
  return CallConstraint(tools, format, max_calls, after_open_tag);
}

// `after_open_tag`: the grammar of what follows the model's own "<tool_call>" (hermes, lazy).
model::ConstraintSpec CallConstraint(const std::vector<Tool>& tools, model::ToolCallFormat format,
                                     int max_calls, bool after_open_tag) {
  const model::ToolCallMarkup markup = model::MarkupOf(format);
  Ordered defs = Ordered::object();
  Ordered any_call = Ordered::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    any_call.push_back(CallSchema(tools[i], static_cast<int>(i), markup, defs));
  }
  Ordered call = any_call.size() == 1 ? any_call[0] : Ordered{{"anyOf", any_call}};
  model::ConstraintSpec spec;
  spec.kind = model::ConstraintKind::kJsonSchema;
  const bool array =
      markup.array || (format == model::ToolCallFormat::kGenericJson && max_calls > 1);
  Ordered schema;
  if (array) {
    schema = Ordered{{"type", "array"}, {"items", call}, {"minItems", 1}, {"maxItems", max_calls}};
  } else {
    schema = call;
    if (after_open_tag) {
      // "<tool_call>" was written: "\n{...}\n</tool_call>", then more calls or the end.
      spec.framing.before = "\n";
      spec.framing.after = markup.call_close;
      spec.framing.separator = "\n<tool_call>";
      spec.framing.max_documents = max_calls;
    } else if (!markup.call_open.empty()) {
      spec.framing.before = markup.call_open;
      spec.framing.after = markup.call_close;
      spec.framing.separator = "\n";
      spec.framing.max_documents = max_calls;
    }
  }
  schema["$defs"] = std::move(defs);
  spec.text = schema.dump();
  return spec;
}

// The tag after which a format's call starts: hermes "<tool_call>" (plain text), Mistral's
// gpt-oss's harmony: a call is a message to the tool (harmony_framing.h), and <|call|> ends the
// generation, so a reply holds one call.
model::ConstraintSpec HarmonyCallConstraint(const std::vector<Tool>& tools) {
  Ordered defs = Ordered::object();
  Ordered branches = Ordered::array();
  std::vector<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    branches.push_back(Ordered{{"$ref", AddParameters(tools[i], static_cast<int>(i), defs)}});
    names.push_back(tools[i].name);
  }
  model::JsonFraming framing = HarmonyCallFraming(names);
  model::ConstraintSpec spec;
  spec.kind = model::ConstraintKind::kJsonSchema;
  spec.text = Ordered{{"anyOf", std::move(branches)}, {"$defs", std::move(defs)}}.dump();
  spec.framing = std::move(framing);
  return spec;
}

// "[TOOL_CALLS]" and Phi-4-mini's "<|tool_call|>" (control tokens in their vocabularies, then
// the calls' JSON array); "" for formats without one.
std::string LazyTrigger(model::ToolCallFormat format) {
  switch (format) {
    case model::ToolCallFormat::kHermes:
    case model::ToolCallFormat::kQwen3Coder:
      return "<tool_call>";
    case model::ToolCallFormat::kMistral:
    case model::ToolCallFormat::kPhi4Mini:
    case model::ToolCallFormat::kLfm2:
      return model::MarkupOf(format).array_open;
    case model::ToolCallFormat::kLlama3Json:
    case model::ToolCallFormat::kHarmony:  // its calls are messages, not a tagged JSON
    case model::ToolCallFormat::kGenericJson:
      return "";
  }
  return "";
}

}  // namespace

absl::StatusOr<ToolPlan> PlanTools(const v1::ChatRequest& request, const model::ReplyFormat& format,
                                   model::ConstraintCompiler* compiler,
                                   const ParsedTools* parsed_tools) {
  ToolPlan plan;
  plan.reply.format = format.tool_calls;
  plan.reply.reasoning = format.reasoning;
  plan.reply.id_seed = request.sampling().has_seed() ? request.sampling().seed() : 0;
  TEXTGEN_RETURN_IF_ERROR(CheckToolMessages(request));
  const v1::ToolChoice& choice = request.tool_choice();
  if (choice.mode() == v1::ToolChoice::TOOL_CHOICE_NONE) return plan;
  std::optional<model::jinja::Value> template_tools;
  absl::StatusOr<std::vector<Tool>> tools = std::vector<Tool>{};
  if (parsed_tools != nullptr) {
    tools = ReadTools(parsed_tools->array, compiler, template_tools);
  } else if (!request.tools_json().empty()) {
    tools =
        ReadTools(Ordered::parse(request.tools_json(), nullptr, false), compiler, template_tools);
  }
  if (!tools.ok()) return tools.status();
  const bool forced = choice.mode() == v1::ToolChoice::TOOL_CHOICE_REQUIRED ||
                      choice.mode() == v1::ToolChoice::TOOL_CHOICE_FUNCTION;
  if (tools->empty()) {
    if (forced) return InvalidField("tool_choice", "asks for a call, but the request has no tools");
    return plan;
  }
  plan.offer_tools = true;
  plan.template_tools = std::move(template_tools);
  plan.reply.parse_tool_calls = true;
  const bool xml = model::MarkupOf(format.tool_calls).xml_parameters;
  for (const Tool& tool : *tools) {
    plan.reply.tool_names.push_back(tool.name);
    if (!xml) continue;
    // The parameters the XML format writes as raw text (the constraint uses the same rule).
    std::set<std::string>& text = plan.reply.text_parameters[tool.name];
    if (!tool.parameters.contains("properties") || !tool.parameters["properties"].is_object()) {
      continue;
    }
    for (const auto& [key, schema] : tool.parameters["properties"].items()) {
      if (model::IsXmlTextParameter(schema)) text.insert(key);
    }
  }
  const bool parallel = !request.has_parallel_tool_calls() || request.parallel_tool_calls();
  if (!forced) {
    // auto: free text until the model opens a call with its format's tag, then the call
    // follows the tools' schemas. Formats whose call is the bare reply (llama3-json, generic
    // JSON) have no tag to wait for and stay unconstrained.
    const std::string trigger = LazyTrigger(format.tool_calls);
    if (!trigger.empty() && compiler != nullptr &&
        request.constraint().kind_case() == v1::OutputConstraint::KIND_NOT_SET) {
      const int max_calls = parallel ? kMaxToolCallsPerReply : 1;
      plan.constraint =
          FormatCallConstraint(*tools, format.tool_calls, max_calls, /*after_open_tag=*/true);
      plan.constraint_trigger = trigger;
    }
    return plan;
  }
  // A forced reply is a call, so an output format for text (response_format, text.format)
  // has nothing to apply to in it: the call's constraint replaces it, as OpenAI takes both
  // (an agent with a structured final output still forces its first call).
  std::vector<Tool> callable = *std::move(tools);
  if (choice.mode() == v1::ToolChoice::TOOL_CHOICE_FUNCTION) {
    auto it = std::find_if(callable.begin(), callable.end(),
                           [&](const Tool& t) { return t.name == choice.function_name(); });
    if (it == callable.end()) {
      return InvalidField("tool_choice.function.name",
                          StrCat("\"", model::SanitizeUtf8(choice.function_name().substr(0, 64)),
                                 "\" is not one of the request's tools"));
    }
    callable = {*it};
  }
  if (compiler == nullptr) {
    return FieldError(absl::StatusCode::kUnimplemented, "tool_choice",
                      "forcing a call needs output constraints, which are not enabled on this "
                      "server");
  }
  if (format.tool_calls == model::ToolCallFormat::kHarmony) {
    plan.constraint = HarmonyCallConstraint(callable);
    return plan;
  }
  const bool single = choice.mode() == v1::ToolChoice::TOOL_CHOICE_FUNCTION || !parallel ||
                      format.tool_calls == model::ToolCallFormat::kLlama3Json;
  const int max_calls = single ? 1 : kMaxToolCallsPerReply;
  plan.constraint =
      FormatCallConstraint(callable, format.tool_calls, max_calls, /*after_open_tag=*/false);
  return plan;
}

void FitToPrompt(ToolPlan& plan, std::string_view prompt) {
  if (!plan.reply.reasoning) return;
  const size_t end = prompt.find_last_not_of(" \n\r\t");
  const std::string_view text = prompt.substr(0, end == std::string_view::npos ? 0 : end + 1);
  plan.reply.starts_in_reasoning = text.ends_with(plan.reply.reasoning->open);
  const bool thinking_closed = text.ends_with(plan.reply.reasoning->close);
  if (!plan.constraint) return;
  if (!plan.constraint_trigger.empty()) {  // auto
    if (!thinking_closed) {
      plan.constraint.reset();
      plan.constraint_trigger.clear();
    }
    return;
  }
  if (plan.reply.starts_in_reasoning) {
    plan.constraint_trigger = plan.reply.reasoning->close;
    plan.constraint->framing.max_leading_whitespace = 4;
  }
}

}  // namespace textgen::server
