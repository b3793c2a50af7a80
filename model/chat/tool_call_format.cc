#include "model/chat/tool_call_format.h"

#include <array>
#include <utility>

namespace textgen::model {
namespace {

constexpr std::array<std::pair<ToolCallFormat, const char*>, 8> kNames = {{
    {ToolCallFormat::kHermes, "hermes"},
    {ToolCallFormat::kLlama3Json, "llama3-json"},
    {ToolCallFormat::kMistral, "mistral"},
    {ToolCallFormat::kPhi4Mini, "phi4-mini"},
    {ToolCallFormat::kHarmony, "harmony"},
    {ToolCallFormat::kQwen3Coder, "qwen3-coder"},
    {ToolCallFormat::kLfm2, "lfm2"},
    {ToolCallFormat::kGenericJson, "generic-json"},
}};

bool Has(std::string_view text, std::string_view marker) {
  return text.find(marker) != std::string_view::npos;
}

}  // namespace

const char* ToolCallFormatName(ToolCallFormat format) {
  for (const auto& [f, name] : kNames) {
    if (f == format) return name;
  }
  return "generic-json";
}

std::optional<ToolCallFormat> ToolCallFormatFromName(std::string_view name) {
  for (const auto& [f, n] : kNames) {
    if (name == n) return f;
  }
  return std::nullopt;
}

std::string ToolCallFormatNames() {
  std::string names;
  for (const auto& [f, name] : kNames) {
    if (!names.empty()) names += ", ";
    names += name;
  }
  return names;
}

ToolCallFormat DetectToolCallFormat(std::string_view source) {
  // Most specific markers first: a Hermes-style template may mention JSON "parameters".
  if (Has(source, "<|channel|>") && Has(source, "<|message|>")) return ToolCallFormat::kHarmony;
  // Qwen3-Coder's XML parameters inside Hermes's tags (Qwen3.5, Nemotron 3 Nano): the tag
  // alone would read as hermes.
  if (Has(source, "<tool_call>") && Has(source, "<function=") && Has(source, "<parameter=")) {
    return ToolCallFormat::kQwen3Coder;
  }
  if (Has(source, "<tool_call>")) return ToolCallFormat::kHermes;
  // LFM2's tool list and call tags; LFM2.5-Instruct's template only says "List of tools: [".
  if (Has(source, "<|tool_call_start|>") || Has(source, "<|tool_list_start|>") ||
      Has(source, "List of tools: [")) {
    return ToolCallFormat::kLfm2;
  }
  if (Has(source, "[TOOL_CALLS]")) return ToolCallFormat::kMistral;
  // Phi-4-mini's own template lists the tools between <|tool|> and <|/tool|> and renders no
  // calls; its model card's replies are <|tool_call|>[...]<|/tool_call|>.
  if (Has(source, "<|tool_call|>") || Has(source, "<|/tool|>")) return ToolCallFormat::kPhi4Mini;
  if (Has(source, "<|python_tag|>") ||
      (Has(source, "<|start_header_id|>") && Has(source, "\"parameters\""))) {
    return ToolCallFormat::kLlama3Json;
  }
  return ToolCallFormat::kGenericJson;
}

std::optional<ReasoningTags> DetectReasoningTags(std::string_view source) {
  if (Has(source, "</think>")) return ReasoningTags{"<think>", "</think>"};
  return std::nullopt;
}

ReplyFormat DetectReplyFormat(std::string_view source) {
  return {DetectToolCallFormat(source), DetectReasoningTags(source)};
}

ToolCallMarkup MarkupOf(ToolCallFormat format) {
  ToolCallMarkup m;
  switch (format) {
    case ToolCallFormat::kHermes:
      m.call_open = "<tool_call>\n";
      m.call_close = "\n</tool_call>";
      break;
    case ToolCallFormat::kQwen3Coder:
      m.call_open = "<tool_call>\n";
      m.call_close = "\n</tool_call>";
      m.xml_parameters = true;
      break;
    case ToolCallFormat::kLfm2:
      m.array = true;
      m.array_open = "<|tool_call_start|>";
      m.array_close = "<|tool_call_end|>";
      m.python_calls = true;
      break;
    case ToolCallFormat::kLlama3Json:
      m.arguments_key = "parameters";
      break;
    case ToolCallFormat::kMistral:
      m.array = true;
      m.array_open = "[TOOL_CALLS]";
      m.id_in_call = true;
      break;
    case ToolCallFormat::kPhi4Mini:
      m.array = true;
      m.array_open = "<|tool_call|>";
      m.array_close = "<|/tool_call|>";
      break;
    case ToolCallFormat::kHarmony:  // a call is a message to the tool (HarmonyReplyParser)
    case ToolCallFormat::kGenericJson:
      break;
  }
  return m;
}

}  // namespace textgen::model
