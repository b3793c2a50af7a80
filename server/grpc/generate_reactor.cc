#include "server/grpc/generate_reactor.h"

#include <chrono>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "model/tokenizer/utf8.h"
#include "server/core/admission.h"
#include "server/core/chat_validation.h"
#include "server/grpc/status_mapping.h"
#include "server/observability/request_report.h"

namespace textgen::server {
namespace {

// Token events merged into one response message at most (when the client reads slower than
// the engine produces, several small deltas become one write).
constexpr size_t kMaxEventsPerWrite = 64;

v1::FinishReason ToProto(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEos:
      return v1::FINISH_REASON_EOS;
    case FinishReason::kStopSequence:
      return v1::FINISH_REASON_STOP_SEQUENCE;
    case FinishReason::kStopToken:
      return v1::FINISH_REASON_STOP_TOKEN;
    case FinishReason::kLength:
      return v1::FINISH_REASON_LENGTH;
    case FinishReason::kToolCalls:
      return v1::FINISH_REASON_TOOL_CALLS;
  }
  return v1::FINISH_REASON_UNSPECIFIED;
}

void AppendDelta(const std::string& text, const std::vector<int>& ids,
                 const std::vector<model::SampleResult>& logprobs,
                 const model::Tokenizer* tokenizer, v1::GenerateResponse& out) {
  out.mutable_text()->append(text);
  for (int id : ids) out.add_token_ids(id);
  for (const model::SampleResult& sample : logprobs) {
    v1::TokenLogprobs* lp = out.add_logprobs();
    lp->set_token_id(sample.token);
    lp->set_logprob(sample.logprob);
    for (const model::TokenLogprob& alt : sample.top) {
      v1::TopLogprob* top = lp->add_top();
      top->set_token_id(alt.token);
      top->set_logprob(alt.logprob);
      if (tokenizer != nullptr)
        top->set_token(model::SanitizeUtf8(tokenizer->TokenText(alt.token)));
    }
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------
// GenerateStream

GenerateStream::GenerateStream(GenerateReactor* reactor, const model::Tokenizer* tokenizer,
                               size_t max_buffered_events)
    : tokenizer_(tokenizer), reactor_(reactor), outbox_(max_buffered_events) {}

bool GenerateStream::Push(StreamEvent event) {
  bool accepted = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ || finish_called_ || close_status_.has_value()) return false;
    // On overflow Pump finishes the RPC with RESOURCE_EXHAUSTED once no write is in flight (a
    // client that never reads again keeps that write pending until its deadline or disconnect).
    accepted = outbox_.Push(std::move(event));
  }
  Pump();
  return accepted;
}

bool GenerateStream::IsClosed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_ || finish_called_ || outbox_.overflowed() || close_status_.has_value();
}

void GenerateStream::SetPrepared(std::string request_id, int prompt_tokens,
                                 std::optional<model::ChatOutputOptions> reply) {
  std::lock_guard<std::mutex> lock(mu_);
  request_id_ = std::move(request_id);
  prompt_tokens_ = prompt_tokens;
  if (reply) parser_.emplace(*std::move(reply));
}

void GenerateStream::Fail(absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!close_status_.has_value()) close_status_ = std::move(status);
    outbox_.Clear();  // nothing more is sent
  }
  Pump();
}

void GenerateStream::OnWriteDone(bool ok) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok && !close_status_.has_value()) {
      close_status_ = absl::CancelledError("the client stream was closed while writing");
    }
  }
  Pump();
}

void GenerateStream::OnCancel(absl::Status status) { Fail(std::move(status)); }

void GenerateStream::OnDone() {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  reactor_ = nullptr;
  outbox_.Clear();
}

void GenerateStream::Pump() {
  // Keeps this object alive while gRPC calls below may let the reactor reach OnDone.
  const std::shared_ptr<GenerateStream> self = shared_from_this();
  enum class Action { kWrite, kWriteAndFinish, kFinish };
  Action action;
  std::deque<StreamEvent> batch;
  GenerateReactor* reactor;
  std::string request_id;
  absl::Status finish_status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (writing_ || finish_called_ || done_) return;
    std::deque<StreamEvent>& queued = outbox_.events();
    if (close_status_.has_value()) {
      final_status_ = *close_status_;
      action = Action::kFinish;
    } else if (outbox_.overflowed()) {
      final_status_ = outbox_.SlowReaderError();
      action = Action::kFinish;
    } else if (queued.empty()) {
      return;
    } else if (const auto* error = std::get_if<ErrorEvent>(&queued.front())) {
      final_status_ =
          error->status.ok() ? absl::InternalError("error event with OK status") : error->status;
      action = Action::kFinish;
    } else {
      // Merge consecutive token deltas, and the final event if it comes right after them.
      action = Action::kWrite;
      while (!queued.empty() && batch.size() < kMaxEventsPerWrite) {
        if (std::holds_alternative<TokenEvent>(queued.front())) {
          batch.push_back(std::move(queued.front()));
          queued.pop_front();
        } else if (std::holds_alternative<FinishedEvent>(queued.front())) {
          batch.push_back(std::move(queued.front()));
          queued.pop_front();
          action = Action::kWriteAndFinish;
          break;
        } else {
          break;  // an ErrorEvent: the next Pump finishes with it
        }
      }
    }
    writing_ = true;
    if (action != Action::kWrite) {
      finish_called_ = true;
      outbox_.Clear();
    }
    if (action == Action::kWriteAndFinish) final_status_ = absl::OkStatus();
    finish_status = final_status_;
    reactor = reactor_;
    request_id = request_id_;
  }
  // Writer role held: no other thread touches response_ or calls into the reactor.
  if (action == Action::kFinish) {
    reactor->Finish(ToGrpcStatus(finish_status));
    return;
  }
  response_.Clear();
  response_.set_request_id(request_id);
  BuildResponse(batch);
  if (action == Action::kWriteAndFinish) {
    reactor->StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  } else {
    reactor->StartWrite(&response_);
  }
}

void GenerateStream::BuildResponse(std::deque<StreamEvent>& events) {
  // Chat replies go through the parser: text is content, the rest in their own fields.
  model::ChatOutputDelta reply;
  const auto read = [&](const std::string& text, bool generated) {
    if (!parser_ || !generated) {
      reply.content += text;
    } else {
      reply.Append(parser_->Feed(text));
    }
  };
  for (StreamEvent& event : events) {
    if (auto* token = std::get_if<TokenEvent>(&event)) {
      read(token->text, /*generated=*/!token->token_ids.empty());  // no ids: the echoed prompt
      AppendDelta("", token->token_ids, token->logprobs, tokenizer_, response_);
    } else if (auto* finished = std::get_if<FinishedEvent>(&event)) {
      read(finished->text, /*generated=*/true);
      if (parser_) reply.Append(parser_->Finish());
      AppendDelta("", finished->token_ids, finished->logprobs, tokenizer_, response_);
      v1::Finished* out = response_.mutable_finished();
      out->set_reason(
          ToProto(ReplyFinishReason(finished->reason, parser_ && !parser_->tool_calls().empty())));
      if (parser_) {
        for (const model::ParsedToolCall& call : parser_->tool_calls()) {
          v1::ToolCall* c = out->add_tool_calls();
          c->set_id(call.id);
          c->set_name(call.name);
          c->set_arguments_json(model::SanitizeUtf8(call.arguments));
        }
      }
      out->set_matched_stop(model::SanitizeUtf8(finished->matched_stop));
      out->mutable_usage()->set_prompt_tokens(finished->usage.prompt_tokens);
      out->mutable_usage()->set_cached_tokens(finished->usage.cached_tokens);
      out->mutable_usage()->set_completion_tokens(finished->usage.completion_tokens);
      out->mutable_timings()->set_queue_seconds(finished->timings.queue_seconds);
      out->mutable_timings()->set_time_to_first_token_seconds(
          finished->timings.time_to_first_token_seconds);
      out->mutable_timings()->set_decode_seconds(finished->timings.decode_seconds);
      out->mutable_timings()->set_total_seconds(finished->timings.total_seconds);
      out->mutable_timings()->set_constraint_compile_seconds(
          finished->timings.constraint_compile_seconds);
      out->mutable_timings()->set_constraint_cache_hit(finished->timings.constraint_cache_hit);
      out->set_seed(finished->seed);
    }
  }
  // The scheduler promises whole characters; a proto3 string must be valid UTF-8 regardless
  // (a tool call's arguments may be cut anywhere).
  response_.set_text(model::SanitizeUtf8(reply.content));
  response_.set_reasoning_text(model::SanitizeUtf8(reply.reasoning));
  for (const model::ToolCallDelta& call : reply.tool_calls) {
    v1::ToolCallDelta* d = response_.add_tool_calls();
    d->set_index(static_cast<uint32_t>(call.index));
    d->set_id(call.id);
    d->set_name(call.name);
    d->set_arguments(model::SanitizeUtf8(call.arguments));
  }
}

GenerateStream::Summary GenerateStream::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Summary{final_status_,
                 request_id_,
                 prompt_tokens_,
                 outbox_.completion_tokens(),
                 outbox_.first_token_time(),
                 outbox_.usage()};
}

// ------------------------------------------------------------------------------------------
// GenerateReactor

GenerateReactor::GenerateReactor(const GenerateDeps& deps, grpc::CallbackServerContext* context)
    : deps_(deps),
      context_(context),
      arrival_time_(absl::Now()),
      stream_(std::make_shared<GenerateStream>(this, deps.tokenizer, deps.max_buffered_events)) {}

RequestContext GenerateReactor::MakeRequestContext(const std::string& principal) const {
  RequestContext request_context;
  request_context.principal = principal;
  request_context.arrival_time = arrival_time_;
  if (context_->deadline() != std::chrono::system_clock::time_point::max()) {
    request_context.deadline = absl::FromChrono(context_->deadline());
  }
  return request_context;
}

// The request is copied into the task: gRPC keeps it only until OnDone, which a client that
// cancels can reach before the task runs.
void GenerateReactor::Start(const v1::GenerateRequest& request, const std::string& principal) {
  Prepare(
      [request, tokenizer = deps_.tokenizer, validation = deps_.validation,
       context = MakeRequestContext(principal)] {
        return ValidateGenerateRequest(request, *tokenizer, *validation, context);
      },
      request.request_id());
}

void GenerateReactor::StartChat(const v1::ChatRequest& request, const std::string& principal) {
  Prepare(
      [request, templates = deps_.chat_templates, tokenizer = deps_.tokenizer,
       validation = deps_.validation, context = MakeRequestContext(principal)] {
        return ValidateChatRequest(request, *templates, *tokenizer, *validation, context);
      },
      request.request_id());
}

void GenerateReactor::Prepare(Validator validate, std::string raw_request_id) {
  stream_->SetPrepared(raw_request_id, 0);  // what the report shows if it never gets further
  auto prepare = [stream = stream_, scheduler = deps_.scheduler,
                  validate = std::move(validate)]() mutable {
    absl::StatusOr<ValidatedRequest> validated = std::move(validate)();
    if (!validated.ok()) return stream->Fail(validated.status());
    stream->SetPrepared(validated->request_id, static_cast<int>(validated->prompt_tokens.size()),
                        validated->reply);
    if (absl::Status status = scheduler->Submit(*std::move(validated), stream); !status.ok()) {
      stream->Fail(std::move(status));
    }
  };
  AdmitForPreparation(deps_.preparation, std::move(prepare),
                      [stream = stream_](const absl::Status& refused) { stream->Fail(refused); });
}

void GenerateReactor::OnWriteDone(bool ok) { stream_->OnWriteDone(ok); }

void GenerateReactor::OnCancel() {
  const absl::Time now = absl::Now();
  const bool past_deadline = context_->deadline() != std::chrono::system_clock::time_point::max() &&
                             absl::FromChrono(context_->deadline()) <= now;
  stream_->OnCancel(past_deadline ? absl::DeadlineExceededError(
                                        absl::StrFormat("the deadline passed after %.3f s",
                                                        absl::ToDoubleSeconds(now - arrival_time_)))
                                  : absl::CancelledError("the client cancelled the request"));
}

void GenerateReactor::OnDone() {
  stream_->OnDone();
  const GenerateStream::Summary summary = stream_->summary();
  RequestReport report("grpc", deps_.observer, deps_.logger, arrival_time_);
  RequestRecord& record = report.record();
  record.request_id = summary.request_id;
  record.prompt_tokens = summary.usage ? summary.usage->prompt_tokens : summary.prompt_tokens;
  record.cached_tokens = summary.usage ? summary.usage->cached_tokens : 0;
  record.completion_tokens = summary.completion_tokens;
  if (summary.first_token_time) {
    record.time_to_first_token_seconds = report.SecondsSinceArrival(*summary.first_token_time);
  }
  report.Finish(summary.status);
  delete this;
}

}  // namespace textgen::server
