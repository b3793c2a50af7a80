#include "server/http/openai/openai_stream.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace textgen::server::http {

// What the scheduler holds for one choice: its events go to the stream under its index.
class OpenAiStream::ChoiceSink final : public StreamSink {
 public:
  ChoiceSink(std::shared_ptr<OpenAiStream> stream, int index)
      : stream_(std::move(stream)), index_(index) {}
  bool Push(StreamEvent event) override { return stream_->Push(index_, std::move(event)); }
  bool IsClosed() const override { return stream_->closed(); }

 private:
  const std::shared_ptr<OpenAiStream> stream_;
  const int index_;
};

OpenAiStream::OpenAiStream(std::shared_ptr<HttpExchange> exchange,
                           const OpenAiStreamOptions& options,
                           std::vector<std::unique_ptr<ChoiceWriter>> writers,
                           std::unique_ptr<RequestReport> report)
    : exchange_(std::move(exchange)),
      options_(options),
      writers_(std::move(writers)),
      report_(std::move(report)) {
  outboxes_.reserve(writers_.size());
  for (size_t i = 0; i < writers_.size(); ++i) {
    outboxes_.emplace_back(options_.max_buffered_events);
  }
}

std::shared_ptr<StreamSink> OpenAiStream::Sink(int index) {
  return std::make_shared<ChoiceSink>(shared_from_this(), index);
}

void OpenAiStream::Begin() {
  exchange_->SetOnClose([weak = weak_from_this()] {
    if (auto self = weak.lock()) {
      self->closed_ = true;
      self->Complete(absl::CancelledError("the client closed the connection"), std::nullopt);
    }
  });
  if (options_.stream) {
    exchange_->StartStream(200, "text/event-stream");
    for (const std::unique_ptr<ChoiceWriter>& writer : writers_) {
      exchange_->Write(writer->StreamStart());
    }
  }
}

void OpenAiStream::Abort(const absl::Status& status) {
  closed_ = true;  // the choices already submitted are dropped at the next step
  exchange_->Respond(ApiErrorResponse(status));
  Complete(status, std::nullopt);
}

bool OpenAiStream::Push(int index, StreamEvent event) {
  bool post = false;
  bool accepted = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    EventOutbox& outbox = outboxes_[static_cast<size_t>(index)];
    if (closed_ || outbox.overflowed()) return false;
    accepted = outbox.Push(std::move(event));
    post = !flush_posted_;
    flush_posted_ = true;
  }
  if (post) exchange_->Post([self = shared_from_this()] { self->Flush(); });
  return accepted;
}

void OpenAiStream::Flush() {
  std::vector<std::deque<StreamEvent>> events(outboxes_.size());
  absl::Status slow_reader;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < outboxes_.size(); ++i) {
      events[i].swap(outboxes_[i].events());
      if (outboxes_[i].overflowed() && slow_reader.ok()) {
        slow_reader = outboxes_[i].SlowReaderError();
      }
    }
    flush_posted_ = false;
  }
  if (report_->finished()) return;
  if (exchange_->closed()) {
    closed_ = true;
    return Complete(absl::CancelledError("the client closed the connection"), std::nullopt);
  }
  if (slow_reader.ok() && exchange_->unsent_bytes() > options_.max_unsent_bytes) {
    slow_reader =
        EventOutbox::SlowReaderError(absl::StrCat(options_.max_unsent_bytes, " bytes unsent"));
  }
  if (!slow_reader.ok()) {
    closed_ = true;
    return FailResponse(slow_reader);
  }
  for (size_t i = 0; i < events.size(); ++i) {
    ChoiceWriter& writer = *writers_[i];
    for (StreamEvent& event : events[i]) {
      if (const auto* token = std::get_if<TokenEvent>(&event)) {
        if (!options_.stream) {
          writer.Collect(*token);
        } else if (std::string chunk = writer.StreamDelta(*token); !chunk.empty()) {
          exchange_->Write(std::move(chunk));
        }
      } else if (auto* finished = std::get_if<FinishedEvent>(&event)) {
        if (options_.stream) {
          exchange_->Write(writer.StreamEnd(*finished));
        } else {
          writer.Collect(*finished);
        }
        ends_.push_back(std::move(*finished));
      } else if (const auto* error = std::get_if<ErrorEvent>(&event)) {
        closed_ = true;
        return FailResponse(error->status.ok() ? absl::InternalError("error event with OK status")
                                               : error->status);
      }
    }
  }
  if (ends_.size() == writers_.size()) End();
}

void OpenAiStream::End() {
  closed_ = true;
  // The prompt once (each choice reports it), every choice's completion; cached: what the
  // choice that computed the prompt found (the others take it from the cache).
  Usage usage = ends_.front().usage;
  usage.completion_tokens = 0;
  for (const FinishedEvent& end : ends_) {
    usage.completion_tokens += end.usage.completion_tokens;
    usage.cached_tokens = std::min(usage.cached_tokens, end.usage.cached_tokens);
  }
  FinishedEvent total = ends_.front();
  total.usage = usage;
  if (options_.stream) {
    exchange_->Write(writers_.front()->StreamTail(total));
    exchange_->EndStream();
  } else {
    std::vector<ChoiceWriter::Choice> choices;
    for (const std::unique_ptr<ChoiceWriter>& writer : writers_) {
      choices.push_back(writer->TakeChoice());
    }
    if (options_.returned_choices > 0 &&
        options_.returned_choices < static_cast<int>(choices.size())) {
      choices = Best(std::move(choices), options_.returned_choices);
    }
    exchange_->Respond(HttpResponse::Json(200, writers_.front()->Body(std::move(choices), total)));
  }
  Complete(absl::OkStatus(), usage);
}

std::vector<ChoiceWriter::Choice> OpenAiStream::Best(std::vector<ChoiceWriter::Choice> choices,
                                                     int n) const {
  std::vector<size_t> order(choices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto score = [&](size_t i) {
    return writers_[i]->MeanLogprob().value_or(-std::numeric_limits<double>::infinity());
  };
  // Ties keep the candidates' order, so a seeded request returns the same choices every time.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return score(a) > score(b); });
  std::vector<ChoiceWriter::Choice> best;
  for (int i = 0; i < n; ++i) {
    ChoiceWriter::Choice choice = std::move(choices[order[i]]);
    choice["index"] = i;
    best.push_back(std::move(choice));
  }
  return best;
}

void OpenAiStream::FailResponse(const absl::Status& status) {
  const ApiError error = ApiErrorFromStatus(status);
  if (options_.stream) {
    // The 200 and earlier chunks are sent: the error goes into the stream.
    exchange_->Write(writers_.front()->StreamError(error));
    exchange_->EndStream();
  } else {
    exchange_->Respond(ApiErrorResponse(status));
  }
  Complete(status, std::nullopt);
}

void OpenAiStream::Complete(const absl::Status& status, const std::optional<Usage>& usage) {
  if (report_->finished()) return;
  RequestRecord& record = report_->record();
  {
    std::lock_guard<std::mutex> lock(mu_);
    record.completion_tokens = 0;
    std::optional<absl::Time> first;
    for (const EventOutbox& outbox : outboxes_) {
      record.completion_tokens += outbox.completion_tokens();
      if (const std::optional<absl::Time> t = outbox.first_token_time()) {
        first = first.has_value() ? std::min(*first, *t) : *t;
      }
    }
    if (first) record.time_to_first_token_seconds = report_->SecondsSinceArrival(*first);
  }
  if (usage) {
    record.prompt_tokens = usage->prompt_tokens;
    record.cached_tokens = usage->cached_tokens;
  }
  report_->Finish(status);
}

}  // namespace textgen::server::http
