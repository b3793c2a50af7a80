#pragma once

// How a constrained reply is framed in gpt-oss's harmony format, where the answer is a message
// after the model's own analysis messages, not the reply's first bytes:
//   [<|channel|>analysis<|message|>TEXT<|end|><|start|>assistant]...   (at most kMaxAnalyses)
//   HEADER JSON
// with HEADER "<|channel|>final<|message|>" for an output format (response_format) and
// "<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>" for a forced call;
// <|return|> or <|call|> then ends the generation. The tags are control tokens, spelled as the
// token trie spells them (model::TokenTrie::ControlTokenBytes), so only the tokens themselves,
// never text, can write them.

#include <string>
#include <vector>

#include "model/constraint/json_schema.h"

namespace textgen::server {

inline constexpr int kMaxHarmonyAnalyses = 3;

// An output format's JSON as the final message.
model::JsonFraming HarmonyFinalFraming();

// A call of one of `tools` as a commentary message to it: the framing of a schema whose anyOf
// holds each tool's arguments, in this order.
model::JsonFraming HarmonyCallFraming(const std::vector<std::string>& tools);

}  // namespace textgen::server
