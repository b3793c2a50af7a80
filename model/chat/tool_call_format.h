#pragma once

// How a model family writes tool calls and reasoning in its replies, read off its chat
// template's own markers (what the template renders for an assistant's tool_calls is what the
// model was trained to write).
//
//   hermes        <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, repeated
//                 (Hermes 2/3, Qwen 2.5, Qwen 3, SmolLM3, QwQ)
//   llama3-json   {"name": ..., "parameters": {...}} as the whole reply (Llama 3.1-3.3; the
//                 <|python_tag|> they may write first is a control token: no text)
//   mistral       [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}, ...] (the tag
//                 is a control token in Tekken vocabularies; ids are 9 letters and digits)
//   phi4-mini     <|tool_call|>[{"name": ..., "arguments": {...}}]<|/tool_call|>
//   harmony       <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}
//                 (gpt-oss: a message to the tool; reasoning in the analysis channel)
//   qwen3-coder   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...
//                 </function>\n</tool_call>, repeated (Qwen3-Coder, Qwen3.5 / 3.6, Nemotron 3
//                 Nano): a text parameter's value is the raw text, any other is JSON
//   lfm2          <|tool_call_start|>[NAME(KEY=VALUE, ...), ...]<|tool_call_end|> (LFM2 /
//                 LFM2.5: Python calls, Python or JSON literals; the tags are control tokens)
//   generic-json  {"name": ..., "arguments": {...}} or an array of them, as the whole reply,
//                 for templates without a format of their own

#include <optional>
#include <string>
#include <string_view>

namespace textgen::model {

enum class ToolCallFormat {
  kHermes,
  kLlama3Json,
  kMistral,
  kPhi4Mini,
  kHarmony,
  kQwen3Coder,
  kLfm2,
  kGenericJson,
};

const char* ToolCallFormatName(ToolCallFormat format);
std::optional<ToolCallFormat> ToolCallFormatFromName(std::string_view name);
// Every format's name, comma-separated (for messages that list the choices).
std::string ToolCallFormatNames();

// The format a template's markers name; kGenericJson when it has none.
ToolCallFormat DetectToolCallFormat(std::string_view template_source);

// The tags a model thinks between (<think> ... </think>), when its template knows them.
struct ReasoningTags {
  std::string open;
  std::string close;
};
std::optional<ReasoningTags> DetectReasoningTags(std::string_view template_source);

// How replies rendered with a template are read.
struct ReplyFormat {
  ToolCallFormat tool_calls = ToolCallFormat::kGenericJson;
  std::optional<ReasoningTags> reasoning;
};
ReplyFormat DetectReplyFormat(std::string_view template_source);

// What a format puts around its calls, for building a constraint and for parsing.
struct ToolCallMarkup {
  std::string call_open;   // before each call ("<tool_call>\n"); empty: none
  std::string call_close;  // after each call ("\n</tool_call>")
  bool array = false;      // the calls are one JSON array (mistral, phi4-mini)
  // Tags around the array ("[TOOL_CALLS]", "<|tool_call|>" ... "<|/tool_call|>"): read
  // when they appear as text, never required (they are control tokens in these vocabularies,
  // which decode to no text).
  std::string array_open;
  std::string array_close;
  const char* arguments_key = "arguments";  // llama3-json: "parameters"
  bool id_in_call = false;                  // mistral: the template expects "id" back
  // qwen3-coder: between the tags, <function=NAME> and one <parameter=KEY> block per argument
  // instead of a JSON object; an opening call tag also ends the reasoning (Qwen3.5 may call
  // without closing its thinking, as llama.cpp's parser allows).
  bool xml_parameters = false;
  // lfm2: each call in the array is a Python call, NAME(KEY=VALUE, ...), not a JSON object.
  bool python_calls = false;
};

// The qwen3-coder format's tags.
struct XmlCallTags {
  static constexpr std::string_view kFunctionOpen = "<function=";
  static constexpr std::string_view kFunctionClose = "</function>";
  static constexpr std::string_view kParameterOpen = "<parameter=";
  static constexpr std::string_view kParameterClose = "</parameter>";
};
ToolCallMarkup MarkupOf(ToolCallFormat format);

// gpt-oss's harmony tags (control tokens in its vocabulary, printed). A message is
// <|start|>ROLE<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>TYPE]<|message|>TEXT<|end|>; the
// reply parser reads them and a forced call's constraint writes them.
struct HarmonyTags {
  static constexpr std::string_view kStart = "<|start|>";
  static constexpr std::string_view kChannel = "<|channel|>";
  static constexpr std::string_view kMessage = "<|message|>";
  static constexpr std::string_view kEnd = "<|end|>";
  static constexpr std::string_view kConstrain = "<|constrain|>";
};

}  // namespace textgen::model
