#pragma once

// Templates that do not show a model its tools or its earlier calls the usual way (the `tools`
// variable, an assistant message's `tool_calls`). Phi-4-mini's template reads its tools as
// JSON text in a system message's `tools` field and renders no calls: left alone, the model
// would never see the tools a request offers, nor on the next turn the calls it made.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/chat/jinja/value.h"
#include "model/chat/tool_call_format.h"

namespace textgen::model {

// What a chat template reads of a conversation's tools, from its source.
struct TemplateToolSupport {
  bool reads_tool_calls = false;  // renders an assistant message's tool_calls
  // Shows tools only through a system message's `tools` field, never the `tools` variable.
  bool tools_in_system_message = false;
  // Treats a call's arguments as a mapping (`arguments|items`: Qwen3.5, Qwen3-Coder, Nemotron 3
  // Nano; `arguments|tojson`: Qwen 2.5, Llama 3.x, gpt-oss), so arguments sent as OpenAI's JSON
  // string reach it as the object they hold, as the model was trained to see them (a string
  // would be iterated as characters, or written quoted). Templates that join the arguments
  // into text as they are get the string.
  bool reads_object_arguments = false;
};
TemplateToolSupport DetectTemplateToolSupport(std::string_view source);

// The system message a tools-in-system template gets when the conversation has none (the
// sentence Phi-4-mini's model card puts before its tools).
inline constexpr char kToolsSystemPrompt[] = "You are a helpful assistant with some tools.";

// `tools` (OpenAI's list of {"type": "function", "function": {...}}) as the JSON text a system
// message's `tools` field holds: the list of function objects, as json.dumps writes it.
absl::StatusOr<std::string> ToolsAsSystemText(const jinja::Value& tools);

// `calls` (OpenAI's shape) with each arguments JSON string that holds an object replaced by
// that object.
jinja::Value WithObjectArguments(const jinja::Value& calls);

// An assistant message's content followed by its `tool_calls` (OpenAI's shape; arguments a
// JSON string or an object) written as `format` writes calls. The format's tags are trusted (so
// control-token tags encode as the tokens the model wrote); the content, names and arguments
// stay tainted.
absl::StatusOr<jinja::TaintedString> ContentWithCalls(std::string_view content,
                                                      const jinja::Value& calls,
                                                      ToolCallFormat format);

}  // namespace textgen::model
