#include "client/generate_stream.h"

#include <chrono>
#include <ostream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"

namespace textgen::client {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void PrintLogprobs(const textgen::v1::GenerateResponse& response, CommandIo& io) {
  for (const textgen::v1::TokenLogprobs& lp : response.logprobs()) {
    io.err << absl::StrFormat("[logprob] token %d: %.4f", lp.token_id(), lp.logprob());
    for (const textgen::v1::TopLogprob& top : lp.top()) {
      io.err << absl::StrFormat("  %d %s %.4f", top.token_id(), absl::CHexEscape(top.token()),
                                top.logprob());
    }
    io.err << "\n";
  }
}

void PrintSummary(const StreamResult& result, CommandIo& io) {
  if (!result.finished) return;
  const textgen::v1::Finished& f = result.finish;
  io.err << "\n[finish] reason=" << FinishReasonName(f.reason());
  if (!f.matched_stop().empty())
    io.err << " matched_stop=\"" << absl::CHexEscape(f.matched_stop()) << "\"";
  io.err << " seed=" << f.seed() << "\n";
  io.err << absl::StrFormat("[usage] prompt_tokens=%d cached_tokens=%d completion_tokens=%d\n",
                            f.usage().prompt_tokens(), f.usage().cached_tokens(),
                            f.usage().completion_tokens());
  const textgen::v1::Timings& t = f.timings();
  io.err << absl::StrFormat("[server] queue=%.3fs ttft=%.3fs decode=%.3fs total=%.3fs",
                            t.queue_seconds(), t.time_to_first_token_seconds(), t.decode_seconds(),
                            t.total_seconds());
  if (t.decode_seconds() > 0 && f.usage().completion_tokens() > 1) {
    io.err << absl::StrFormat(" decode_rate=%.1f tok/s",
                              (f.usage().completion_tokens() - 1) / t.decode_seconds());
  }
  io.err << "\n";
  io.err << absl::StrFormat("[client] ttft=%.3fs total=%.3fs\n", result.client_ttft_seconds,
                            result.client_total_seconds);
}

}  // namespace

std::string FinishReasonName(textgen::v1::FinishReason reason) {
  switch (reason) {
    case textgen::v1::FINISH_REASON_EOS:
      return "EOS";
    case textgen::v1::FINISH_REASON_STOP_SEQUENCE:
      return "STOP_SEQUENCE";
    case textgen::v1::FINISH_REASON_STOP_TOKEN:
      return "STOP_TOKEN";
    case textgen::v1::FINISH_REASON_LENGTH:
      return "LENGTH";
    case textgen::v1::FINISH_REASON_CONTEXT_FULL:
      return "CONTEXT_FULL";
    case textgen::v1::FINISH_REASON_TOOL_CALLS:
      return "TOOL_CALLS";
    default:
      return "UNSPECIFIED";
  }
}

namespace {

StreamResult ReadStream(grpc::ClientReaderInterface<textgen::v1::GenerateResponse>& reader,
                        Clock::time_point start, const StreamPrintOptions& options, CommandIo& io) {
  StreamResult result;
  google::protobuf::util::JsonPrintOptions json_options;
  json_options.preserve_proto_field_names = true;
  textgen::v1::GenerateResponse response;
  bool first = true;
  bool thinking = false;  // inside a [thinking] block on io.err
  int open_call = -1;     // the tool call being printed on io.out
  while (reader.Read(&response)) {
    if (first && options.prompt_to_err && !options.json) {
      first = false;
      io.err << "[prompt]\n" << response.text() << "\n[/prompt]\n" << std::flush;
      response.clear_text();
    }
    first = false;
    if (result.client_ttft_seconds < 0 && response.token_ids_size() > 0) {
      result.client_ttft_seconds = SecondsSince(start);
    }
    result.text += response.text();
    result.reasoning += response.reasoning_text();
    if (response.has_finished()) {
      result.finished = true;
      result.finish = response.finished();
    }
    if (options.json) {
      std::string line;
      if (google::protobuf::util::MessageToJsonString(response, &line, json_options).ok()) {
        io.out << line << "\n" << std::flush;
      }
    } else {
      if (!response.reasoning_text().empty()) {
        if (!thinking) io.err << "[thinking]\n";
        thinking = true;
        io.err << response.reasoning_text() << std::flush;
      }
      if (thinking &&
          (!response.text().empty() || response.tool_calls_size() > 0 || response.has_finished())) {
        io.err << "\n[/thinking]\n" << std::flush;
        thinking = false;
      }
      if (!response.text().empty()) io.out << response.text() << std::flush;
      for (const textgen::v1::ToolCallDelta& call : response.tool_calls()) {
        if (static_cast<int>(call.index()) != open_call) {
          io.out << (open_call >= 0 ? "\n" : "") << "[tool call " << call.name() << "] ";
          open_call = static_cast<int>(call.index());
        }
        io.out << call.arguments() << std::flush;
      }
    }
    if (options.verbose) PrintLogprobs(response, io);
  }
  result.status = reader.Finish();
  result.client_total_seconds = SecondsSince(start);
  if (options.verbose && result.status.ok()) PrintSummary(result, io);
  return result;
}

}  // namespace

StreamResult StreamGenerate(textgen::v1::TextGeneration::StubInterface& stub,
                            grpc::ClientContext& context,
                            const textgen::v1::GenerateRequest& request,
                            const StreamPrintOptions& options, CommandIo& io) {
  const Clock::time_point start = Clock::now();
  return ReadStream(*stub.Generate(&context, request), start, options, io);
}

StreamResult StreamChat(textgen::v1::TextGeneration::StubInterface& stub,
                        grpc::ClientContext& context, const textgen::v1::ChatRequest& request,
                        const StreamPrintOptions& options, CommandIo& io) {
  const Clock::time_point start = Clock::now();
  return ReadStream(*stub.Chat(&context, request), start, options, io);
}

}  // namespace textgen::client
