#pragma once

// Splits a chat reply, as it streams, into content, reasoning and tool calls, so no markup of
// the model's format reaches `content`. Fed text in any pieces (a tag or a JSON string may be
// cut anywhere); gives back what is settled and holds back only what could still be the start
// of a tag. Not thread-safe: one per reply.
//
// What it does with what models write (docs/tool-calls.md):
//   - reasoning: text between the template's tags (or from the start, when the prompt ended
//     inside them) is reasoning; the whitespace after the closing tag is dropped;
//   - hermes: each <tool_call>{json}</tool_call> is a call; text before, between or after
//     the calls is content, but not the whitespace that follows a call;
//   - qwen3-coder: the same, each call's body read by XmlCallReader; a <tool_call> inside the
//     reasoning also ends it;
//   - bare JSON formats (llama3-json, mistral, phi4-mini, generic-json): a reply whose first
//     non-space character opens an object (or array) is read as calls when it names a declared
//     tool; otherwise that text is content;
//   - a call's stream starts once its name is read (its id, the name), then its arguments
//     as they arrive; arguments written as a JSON string are sent decoded, once whole;
//   - harmony (gpt-oss): channels and recipients, read by HarmonyReplyParser;
//   - a call whose first delta went out (its declared name was read) stays a call as
//     streamed, arguments as they arrived, even when the reply is cut off or its JSON breaks
//     (then `malformed_calls` counts it and the rest of the call, up to its closing tag or the
//     end of the reply, is dropped); a call that never names a declared tool is dropped and
//     counted when it had a tag, and is content again when it was bare JSON.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/chat/tool_call_format.h"
#include "model/chat/tool_call_reader.h"
#include "model/chat/xml_call_reader.h"

namespace textgen::model {

struct ToolCallDelta {
  int index = 0;
  std::string id;         // on a call's first delta only
  std::string name;       // on a call's first delta only
  std::string arguments;  // a fragment of the arguments' JSON text
};

struct ChatOutputDelta {
  std::string content;
  std::string reasoning;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
  // `later` after this one (arguments of the same call are joined).
  void Append(ChatOutputDelta later);
};

struct ParsedToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

struct ChatOutputOptions {
  ToolCallFormat format = ToolCallFormat::kGenericJson;
  // Tools were offered: look for calls. Their names (a call to another name is not a call).
  bool parse_tool_calls = false;
  std::vector<std::string> tool_names;
  // qwen3-coder: per tool, the parameters whose values are text (written raw, not as JSON).
  TextParameters text_parameters;
  std::optional<ReasoningTags> reasoning;
  bool starts_in_reasoning = false;  // the prompt ended inside the reasoning tags
  // Call ids: "call_" + 24 letters and digits, or 9 for mistral (its template checks); drawn
  // from this seed so a seeded request gets the same ids.
  uint64_t id_seed = 0;
};

// Helpers shared by the reply parsers.
// Where the longest suffix of `text` that is a proper prefix of `tag` starts (text.size() when
// none): that much must be held back, it may still become the tag.
size_t HoldBackFrom(std::string_view text, std::string_view tag);
// The next call id drawn from `state` (splitmix64): "call_" and 24 letters and digits, or 9
// letters and digits for mistral.
std::string NextToolCallId(ToolCallFormat format, uint64_t& state);

class HarmonyReplyParser;

class ChatOutputParser {
 public:
  explicit ChatOutputParser(ChatOutputOptions options);
  ~ChatOutputParser();
  ChatOutputParser(ChatOutputParser&&) noexcept;
  ChatOutputParser& operator=(ChatOutputParser&&) noexcept;

  ChatOutputDelta Feed(std::string_view text);
  // The reply ended: releases what was held back.
  ChatOutputDelta Finish();

  // Calls read so far (complete ones, and after Finish a cut-off last one).
  const std::vector<ParsedToolCall>& tool_calls() const;
  int malformed_calls() const;
  const std::string& content() const;
  const std::string& reasoning() const;

 private:
  enum class Mode {
    kStart,      // nothing but whitespace yet: a reasoning tag or bare JSON may come
    kReasoning,  // inside the reasoning tags
    kText,       // content; watching for a call's opening tag
    kBareJson,   // a reply that opened with JSON: buffered until it names a tool
    kCall,       // inside a call's JSON (or the array of calls)
    kCallClose,  // after a call's JSON: its closing tag
    kAfterCall,  // whitespace after a call is dropped
    kSkipCall,   // the rest of a broken call, up to its closing tag (or the end)
  };

  // Reads one JSON object {"name": ..., "arguments": ...} a character at a time.
  class CallReader final : public ToolCallReader {
   public:
    explicit CallReader(const char* arguments_key) : arguments_key_(arguments_key) {}
    Step Push(char c) override;
    const std::optional<std::string>& name() const override { return name_; }
    // (Its arguments are raw JSON; a string value comes decoded, whole.)

   private:
    enum class State { kOpen, kKeyOrClose, kKey, kColon, kValue, kAfterValue, kDone };
    Step Value(char c);
    const char* arguments_key_;
    State state_ = State::kOpen;
    std::string raw_;  // everything read
    std::string key_;
    bool key_escape_ = false;
    // The value being read.
    std::string value_;
    int depth_ = 0;
    bool in_string_ = false;
    bool escape_ = false;
    bool scalar_ = false;
    std::optional<std::string> name_;
    bool arguments_streaming_ = false;  // inside an object/array value of the arguments key
    bool arguments_seen_ = false;       // the arguments key's value has started
  };

  // Reads pending_ by mode until it needs more text; `final`: the reply is over.
  void Process(ChatOutputDelta& out, bool final);
  // The reader of the current mode: true when reading goes on in the next mode, false when
  // it needs more text (or the reply is over).
  bool ReadInMode(ChatOutputDelta& out, bool final);
  bool ReadStart(ChatOutputDelta& out, bool final);
  bool ReadReasoning(ChatOutputDelta& out, bool final);
  bool ReadText(ChatOutputDelta& out, bool final);
  bool ReadCall(ChatOutputDelta& out, bool final);
  bool SkipCall(ChatOutputDelta& out, bool final);
  bool ReadAfterCall(ChatOutputDelta& out, bool final);
  bool ReadCallClose(ChatOutputDelta& out, bool final);
  // Whitespace at the start of pending_, in bytes.
  size_t LeadingSpaces() const;
  // What closes a call (Hermes's </tool_call>) or the array of calls.
  std::string CallCloseTag() const;
  // Text of `pending_` up to `end` goes to content/reasoning.
  void FlushText(size_t end, std::string& sink);
  // Where the longest suffix of pending_ that is a proper prefix of `tag` starts.
  size_t HoldBack(std::string_view tag) const;
  void StartCall();
  void PumpCall(ChatOutputDelta& out, char c);
  void EndCall(ChatOutputDelta& out, bool complete);
  void RevertBareJson(ChatOutputDelta& out);
  std::string NextId();

  ChatOutputOptions options_;
  ToolCallMarkup markup_;
  std::vector<std::string> tags_;  // what opens a call in running text
  Mode mode_;
  std::string pending_;  // text not yet settled
  std::string content_;
  std::string reasoning_;
  std::vector<ParsedToolCall> calls_;
  int malformed_ = 0;
  std::unique_ptr<ToolCallReader> call_;
  bool call_started_ = false;  // its first delta went out
  std::string call_id_;
  // The array formats: reading "[", calls, ",", "]".
  bool in_array_ = false;
  bool array_opened_ = false;
  bool array_expect_call_ = false;
  bool reasoning_seen_ = false;      // reasoning is read once, at the start
  bool drop_leading_space_ = false;  // after the reasoning's closing tag
  std::string bare_json_;            // kBareJson: the text read so far
  uint64_t id_state_;
  std::unique_ptr<HarmonyReplyParser> harmony_;  // the harmony format reads the reply instead
};

}  // namespace textgen::model
