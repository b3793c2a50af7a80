#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "model/chat/chat_output_parser.h"
#include "model/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"
#include "server/http/api_error.h"
#include "server/http/openai/choice_writer.h"
#include "server/scheduler/stream_event.h"

namespace textgen::server::http {

// Generated tokens' logprobs as Chat Completions and Responses list them:
// [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]. `previous`
// is the token before the first (a token's text depends on it); it ends as the last.
nlohmann::ordered_json TokenLogprobs(const std::vector<model::SampleResult>& samples,
                                     const model::Tokenizer& tokenizer, int& previous);

// "stop" or "length", as OpenAI reports why a choice ended.
const char* FinishReasonName(FinishReason reason);

// Turns one choice's engine events into OpenAI response bodies: its part of a whole JSON
// object, or server-sent events ("data: {...}\n\n" ... "data: [DONE]\n\n") for a stream. A
// request with `n` choices has one writer per choice; the first also writes what the response
// has once (the usage, [DONE], the body around the choices). Not thread-safe (one request, one
// thread at a time).
class OpenAiResponseWriter final : public ChoiceWriter {
 public:
  enum class Kind { kChat, kCompletion };
  struct Options {
    Kind kind = Kind::kChat;
    int index = 0;        // of this choice in "choices"
    std::string id;       // "chatcmpl-..." / "cmpl-..."
    int64_t created = 0;  // Unix seconds
    std::string model;
    bool logprobs = false;       // the request asked for them
    bool include_usage = false;  // stream_options.include_usage
    // The token before the first generated one: a token's text depends on it (SentencePiece
    // drops the leading space of a text's first piece).
    int last_prompt_token = -1;
    // Chat: how the reply is split into content, reasoning_content and tool_calls.
    std::optional<model::ChatOutputOptions> reply;
  };
  OpenAiResponseWriter(const Options& options, const model::Tokenizer* tokenizer);

  // Streaming. The first event (chat: the assistant role), each token delta, the choice's end
  // (the last delta with finish_reason), and after every choice ended the tail: the usage
  // chunk when asked for (`total`'s usage), and [DONE].
  std::string StreamStart() override;
  std::string StreamDelta(const TokenEvent& event) override;
  std::string StreamEnd(const FinishedEvent& event) override;
  std::string StreamTail(const FinishedEvent& total) override;
  // An error after the stream started: an SSE event whose data is an error object (the
  // OpenAI SDKs raise it as an APIError).
  std::string StreamError(const ApiError& error) override;

  // Not streaming: collect the deltas and the end, take the choice, then the whole completion
  // object around every choice, with `total`'s usage.
  void Collect(const TokenEvent& event) override;
  void Collect(const FinishedEvent& event) override;
  Choice TakeChoice() override;
  std::optional<double> MeanLogprob() const override;
  std::string Body(std::vector<Choice> choices, const FinishedEvent& total) override;

 private:
  // One streamed chunk: a delta (completions: its content is the text), its tokens' logprobs
  // and maybe the finish reason.
  std::string Chunk(const model::ChatOutputDelta& delta,
                    const std::vector<model::SampleResult>& logprobs, const char* finish_reason);
  // The generated text as the reply parser reads it (echoed prompt text bypasses it).
  model::ChatOutputDelta Read(const std::string& text, bool generated);
  // The reply's finish reason (ReplyFinishReason) in OpenAI's words.
  const char* FinishReasonOf(FinishReason reason) const;

  const Options options_;
  const model::Tokenizer* const tokenizer_;
  std::optional<model::ChatOutputParser> parser_;  // chat
  std::string echo_;  // the echoed prompt (non-streaming chat: before the content)
  std::string text_;  // collected (non-streaming)
  std::vector<model::SampleResult> logprobs_;
  Choice choice_;           // non-streaming: built by Collect(FinishedEvent)
  size_t text_offset_ = 0;  // bytes of completion text already sent (legacy text_offset)
  int previous_token_;      // of the next logprobs entry
};

}  // namespace textgen::server::http
