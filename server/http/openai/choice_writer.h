#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "server/http/api_error.h"
#include "server/scheduler/stream_event.h"

namespace textgen::server::http {

// How one choice's engine events become the bytes of an HTTP response, in one of the API's
// shapes (Chat Completions and Completions: openai_response.h; Responses:
// responses_writer.h). OpenAiStream drives it on the exchange's executor: for a stream,
// StreamStart, a StreamDelta per token event, StreamEnd, and after every choice ended the
// first writer's StreamTail; for one body, Collect each event, TakeChoice, and the first
// writer's Body around every choice. Not thread-safe (one request, one thread at a time).
class ChoiceWriter {
 public:
  using Choice = nlohmann::ordered_json;  // one choice's part of a whole body

  virtual ~ChoiceWriter() = default;

  virtual std::string StreamStart() = 0;
  virtual std::string StreamDelta(const TokenEvent& event) = 0;
  virtual std::string StreamEnd(const FinishedEvent& event) = 0;
  // After every choice ended; `total` carries the request's usage (the prompt once).
  virtual std::string StreamTail(const FinishedEvent& total) = 0;
  // An error after the stream started (the 200 and earlier events are sent).
  virtual std::string StreamError(const ApiError& error) = 0;

  virtual void Collect(const TokenEvent& event) = 0;
  virtual void Collect(const FinishedEvent& event) = 0;
  virtual Choice TakeChoice() = 0;
  // The mean log-probability of the choice's generated tokens (collected; its logprobs must
  // have been asked of the engine), for best_of; nullopt when unknown.
  virtual std::optional<double> MeanLogprob() const { return std::nullopt; }
  virtual std::string Body(std::vector<Choice> choices, const FinishedEvent& total) = 0;
};

}  // namespace textgen::server::http
