#include "server/http/openai_stream.h"

#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/observability/request_report.h"

namespace textgen::server::http {

OpenAiStream::OpenAiStream(std::shared_ptr<HttpExchange> exchange,
                           const OpenAiStreamOptions& options, const model::Tokenizer* tokenizer,
                           RequestRecord record, absl::Time arrival)
    : exchange_(std::move(exchange)),
      options_(options),
      arrival_(arrival),
      writer_(options.writer, tokenizer),
      outbox_(options.max_buffered_events),
      record_(std::move(record)) {}

void OpenAiStream::Begin() {
  exchange_->SetOnClose([weak = weak_from_this()] {
    if (auto self = weak.lock()) {
      self->closed_ = true;
      self->Complete(absl::CancelledError("the client closed the connection"), std::nullopt);
    }
  });
  if (options_.stream) {
    exchange_->StartStream(200, "text/event-stream");
    exchange_->Write(writer_.StreamStart());
  }
}

bool OpenAiStream::Push(StreamEvent event) {
  bool post = false;
  bool accepted = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || outbox_.overflowed()) return false;
    accepted = outbox_.Push(std::move(event));
    post = !flush_posted_;
    flush_posted_ = true;
  }
  if (post) exchange_->Post([self = shared_from_this()] { self->Flush(); });
  return accepted;
}

bool OpenAiStream::IsClosed() const { return closed_; }

void OpenAiStream::Flush() {
  std::deque<StreamEvent> events;
  absl::Status slow_reader;
  {
    std::lock_guard<std::mutex> lock(mu_);
    events.swap(outbox_.events());
    if (outbox_.overflowed()) slow_reader = outbox_.SlowReaderError();
    flush_posted_ = false;
  }
  if (done_) return;
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
  for (StreamEvent& event : events) {
    if (const auto* token = std::get_if<TokenEvent>(&event)) {
      if (options_.stream) {
        if (std::string chunk = writer_.StreamDelta(*token); !chunk.empty()) {
          exchange_->Write(std::move(chunk));
        }
      } else {
        writer_.Collect(*token);
      }
    } else if (const auto* finished = std::get_if<FinishedEvent>(&event)) {
      closed_ = true;
      if (options_.stream) {
        exchange_->Write(writer_.StreamEnd(*finished));
        exchange_->EndStream();
      } else {
        exchange_->Respond(HttpResponse::Json(200, writer_.Body(*finished)));
      }
      return Complete(absl::OkStatus(), finished->usage);
    } else if (const auto* error = std::get_if<ErrorEvent>(&event)) {
      closed_ = true;
      return FailResponse(error->status.ok() ? absl::InternalError("error event with OK status")
                                             : error->status);
    }
  }
}

void OpenAiStream::FailResponse(const absl::Status& status) {
  const ApiError error = ApiErrorFromStatus(status);
  if (options_.stream) {
    // The 200 and earlier chunks are sent: the error goes into the stream.
    exchange_->Write(OpenAiResponseWriter::StreamError(error));
    exchange_->EndStream();
  } else {
    exchange_->Respond(HttpResponse::Json(error.http_status, ApiErrorJson(error)));
  }
  Complete(status, std::nullopt);
}

void OpenAiStream::Complete(const absl::Status& status, const std::optional<Usage>& usage) {
  if (done_) return;
  done_ = true;
  const absl::Time now = absl::Now();
  record_.code = status.code();
  record_.message = std::string(status.message());
  record_.duration_seconds = absl::ToDoubleSeconds(now - arrival_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    record_.completion_tokens = outbox_.completion_tokens();
    if (const std::optional<absl::Time> first = outbox_.first_token_time()) {
      record_.time_to_first_token_seconds = absl::ToDoubleSeconds(*first - arrival_);
    }
  }
  if (usage) {
    record_.prompt_tokens = usage->prompt_tokens;
    record_.cached_tokens = usage->cached_tokens;
  }
  ReportRequestDone(record_, options_.observer, options_.logger);
}

}  // namespace textgen::server::http
