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
#include <string_view>

#include "model/constraint/json_schema.h"

namespace textgen::server {

inline constexpr int kMaxHarmonyAnalyses = 3;

// `tag` (a harmony control token's text) as a constraint writes it.
std::string HarmonyTag(std::string_view tag);

// The analysis messages that may come first; the caller sets what follows them.
model::JsonFraming HarmonyFraming();

// The final message's header, before an output format's JSON.
std::string HarmonyFinalHeader();

}  // namespace textgen::server
