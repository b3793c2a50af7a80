#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/chat/chat_output_parser.h"
#include "model/tokenizer/tokenizer.h"
#include "server/http/json_fields.h"
#include "server/http/openai/choice_writer.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server::http {

struct ResponsesWriterOptions {
  std::string id;          // "resp_..."
  int64_t created_at = 0;  // Unix seconds
  std::string model;
  Json echo;  // the request's parameters, as the response object repeats them
  bool logprobs = false;
  int last_prompt_token = -1;  // the token before the first generated one
  // How the reply splits into reasoning, text and function calls (absent: all text).
  std::optional<model::ChatOutputOptions> reply;
  // Called once, with the finished response object and the reply as the chat message a
  // continuation renders (the response store keeps both); may be empty.
  std::function<void(const Json& response, v1::ChatMessage reply)> on_done;
};

// One response of the Responses API from the engine's events. The reply is split (as chat's)
// into output items, in order: "reasoning" (reasoning_text content), "message" (output_text
// content, with logprobs when asked) and "function_call" (call_id, name, arguments). The
// items are built the same way for a stream and for one body, so a streamed response ends
// with exactly the object a non-streamed one returns. A stream is OpenAI's event sequence:
// response.created, response.in_progress, per item output_item.added, content_part.added,
// *.delta ..., *.done, content_part.done, output_item.done, then response.completed (or
// response.incomplete when max_output_tokens cut it); every event has a sequence_number.
// Whitespace before or after a function call or reasoning is no message text (a message keeps
// whitespace inside it and at the reply's end). Not thread-safe.
class ResponsesWriter final : public ChoiceWriter {
 public:
  ResponsesWriter(ResponsesWriterOptions options, const model::Tokenizer* tokenizer);

  std::string StreamStart() override;
  std::string StreamDelta(const TokenEvent& event) override;
  std::string StreamEnd(const FinishedEvent& event) override;
  std::string StreamTail(const FinishedEvent& total) override;
  std::string StreamError(const ApiError& error) override;

  void Collect(const TokenEvent& event) override;
  void Collect(const FinishedEvent& event) override;
  Choice TakeChoice() override { return Choice(); }
  std::string Body(std::vector<Choice> choices, const FinishedEvent& total) override;

 private:
  enum class ItemKind { kNone, kReasoning, kMessage, kCall };

  // Feeds generated text (and its tokens' logprobs) through the parser into the items.
  void Read(const std::string& text, const std::vector<int>& token_ids,
            const std::vector<model::SampleResult>& logprobs);
  void Finish(const FinishedEvent& event);
  void Apply(const model::ChatOutputDelta& delta);
  void AppendText(const std::string& text);
  void Open(ItemKind kind, Json item);
  // "msg_..." etc. for the item about to be opened.
  std::string NextItemId(const char* prefix) const;
  // The open item's (only) content part.
  void AddPart(Json part);
  void Close();
  // The whole response object; `status` "in_progress", "completed" or "incomplete".
  Json Response(const char* status, const FinishedEvent* total) const;
  // The finished object, reported to on_done once.
  Json Completed(const FinishedEvent& total);
  // Queues a server-sent event when streaming (events_), numbering it.
  void Event(const char* type, Json data);
  std::string TakeEvents();

  const ResponsesWriterOptions options_;
  const model::Tokenizer* const tokenizer_;
  model::ChatOutputParser parser_;
  bool streaming_ = false;
  std::string events_;
  int64_t sequence_ = 0;

  Json output_ = Json::array();  // the items so far
  ItemKind open_ = ItemKind::kNone;
  std::vector<size_t> call_items_;         // output_ index of each call, by the parser's call index
  std::string pending_space_;              // text that is whitespace only, not yet in a message
  Json pending_logprobs_ = Json::array();  // of tokens whose text is not yet in a message
  int previous_token_;
  bool in_reasoning_ = false;  // the last text read was reasoning
  int reasoning_tokens_ = 0;
  std::optional<FinishReason> reason_;
  bool done_reported_ = false;
};

}  // namespace textgen::server::http
