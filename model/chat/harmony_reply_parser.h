#pragma once

// Reads a gpt-oss reply in OpenAI's harmony format as it streams. The model writes a series of
// messages after the prompt's "<|start|>assistant":
//
//   <|channel|>analysis<|message|>REASONING<|end|>
//   <|start|>assistant<|channel|>final<|message|>ANSWER            (then <|return|>, not text)
//   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}
//                                                                   (then <|call|>, not text)
//
// (the recipient may also come before the channel: "<|start|>assistant to=functions.NAME
// <|channel|>commentary json<|message|>"). The analysis channel is reasoning; final, and
// commentary without a recipient (a preamble to the user), are content; a message to
// functions.NAME is a call of NAME with the message as its arguments. Text outside the format
// (no header where one should start) is content, to the end of the reply. Not thread-safe: one per
// reply (ChatOutputParser owns it).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/chat/chat_output_parser.h"

namespace textgen::model {

class HarmonyReplyParser {
 public:
  // Calls are read when `parse_tool_calls` and their name is one of `tool_names`; their ids
  // are drawn from `id_state` (NextToolCallId).
  HarmonyReplyParser(const ChatOutputOptions& options, uint64_t id_state);

  ChatOutputDelta Feed(std::string_view text);
  ChatOutputDelta Finish();

  const std::vector<ParsedToolCall>& tool_calls() const { return calls_; }
  // Messages to a recipient that is not a declared tool (dropped).
  int malformed_calls() const { return malformed_; }
  const std::string& content() const { return content_; }
  const std::string& reasoning() const { return reasoning_; }

 private:
  enum class Mode { kHeader, kBody, kPlain };
  enum class Sink { kReasoning, kContent, kCall, kDropped };

  void Process(ChatOutputDelta& out, bool final);
  // A message's header (the text before <|message|>): where its body goes.
  void StartMessage(std::string_view header, ChatOutputDelta& out);
  void Emit(std::string_view text, ChatOutputDelta& out);
  // Whether `text` can still become a header (it starts like one).
  static bool CouldBeHeader(std::string_view text);

  ChatOutputOptions options_;
  uint64_t id_state_;
  Mode mode_ = Mode::kHeader;
  Sink sink_ = Sink::kContent;
  std::string pending_;
  std::string content_;
  std::string reasoning_;
  std::vector<ParsedToolCall> calls_;
  int malformed_ = 0;
};

}  // namespace textgen::model
