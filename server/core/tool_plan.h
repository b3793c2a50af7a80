#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/chat/chat_output_parser.h"
#include "model/chat/jinja/value.h"
#include "model/chat/tool_call_format.h"
#include "model/constraint/constraint.h"
#include "nlohmann/json.hpp"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server {

inline constexpr int kMaxTools = 128;
// Calls one reply may make when parallel calls are on (required: the constraint's bound).
inline constexpr int kMaxToolCallsPerReply = 8;

// A Chat request's tools as a front end already parsed them (the HTTP body's `tools`), so they
// are not written back into `ChatRequest.tools_json` and parsed again. gRPC sends the text.
struct ParsedTools {
  // Weighs `array` as the prompt limit counts text: its compact JSON's size.
  static ParsedTools Of(nlohmann::ordered_json array) {
    const size_t bytes = array.dump().size();
    return {std::move(array), bytes};
  }
  nlohmann::ordered_json array;  // the tools as sent: checked by PlanTools like the text
  size_t text_bytes = 0;         // their size as compact JSON, which the prompt limit counts
};

// What a Chat request's tools mean: whether the template sees them, the constraint that makes
// the reply a call (tool_choice required or a named function), and how the reply is read.
struct ToolPlan {
  bool offer_tools = false;
  // The tools as the chat template sees them (set when offered): read from the same parse
  // that checked them.
  std::optional<model::jinja::Value> template_tools;
  std::optional<model::ConstraintSpec> constraint;
  // Non-empty: the constraint starts after this text (tool_choice auto: a call's opening tag).
  std::string constraint_trigger;
  model::ChatOutputOptions reply;
};

// Fits the plan to the rendered prompt. A prompt that ends inside the reasoning tags
// (DeepSeek-R1 distills) starts the reply as reasoning, and a forced call waits for the closing
// tag (then a little whitespace). While the model may still think (tags known, the prompt does
// not close them), tool_choice auto is not constrained: a call's tag written inside the
// reasoning must not force a call there; the reply is only parsed.
void FitToPrompt(ToolPlan& plan, std::string_view prompt);

// INVALID_ARGUMENT naming the field: tools that are not function tools with a name and an
// object schema (each `parameters` compiled as a JSON Schema: what the compiler refuses is
// named with its pointer), duplicate names, tool_choice naming an unknown tool or requiring a
// call without tools, a tool message that answers no call. A forced call's constraint
// replaces the request's output constraint (the reply is a call, not text).
// `parsed_tools` (null: parse `request.tools_json()`) replaces the request's text.
// `compiler` null: parameters are not checked and required/named calls are UNIMPLEMENTED.
// tool_choice auto gets a lazy constraint in the formats that open a call with a tag (hermes
// <tool_call>, mistral [TOOL_CALLS], phi4-mini <|tool_call|>): free text until the model
// writes the tag, then the calls follow the tools' schemas.
absl::StatusOr<ToolPlan> PlanTools(const v1::ChatRequest& request, const model::ReplyFormat& format,
                                   model::ConstraintCompiler* compiler,
                                   const ParsedTools* parsed_tools = nullptr);

}  // namespace textgen::server
