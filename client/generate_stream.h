#pragma once

// Runs one streaming Generate or Chat call and prints it: text deltas (flushed as they arrive) or
// one JSON object per response, plus an optional summary on stderr. Used by `generate` and `chat`.

#include <string>

#include "client/command_common.h"
#include "grpcpp/client_context.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::client {

struct StreamPrintOptions {
  bool json = false;     // one JSON line per GenerateResponse on io.out instead of text
  bool verbose = false;  // finish reason, usage, timings (and logprobs) on io.err
  // The request asked for echo: the first message's text is the prompt. It goes to io.err
  // between [prompt] and [/prompt] lines and is not part of StreamResult::text.
  bool prompt_to_err = false;
};

struct StreamResult {
  grpc::Status status;
  std::string text;       // all text deltas concatenated (Chat: the reply's content)
  std::string reasoning;  // Chat: the reasoning text
  bool finished = false;
  textgen::v1::Finished finish;     // valid when `finished`
  double client_ttft_seconds = -1;  // first token-carrying message, measured here; -1 = none
  double client_total_seconds = 0;
};

// Sends `request` and prints the stream to io as it arrives. Never throws; the status says how
// the call ended.
StreamResult StreamGenerate(textgen::v1::TextGeneration::StubInterface& stub,
                            grpc::ClientContext& context,
                            const textgen::v1::GenerateRequest& request,
                            const StreamPrintOptions& options, CommandIo& io);

// As StreamGenerate, for a Chat call.
StreamResult StreamChat(textgen::v1::TextGeneration::StubInterface& stub,
                        grpc::ClientContext& context, const textgen::v1::ChatRequest& request,
                        const StreamPrintOptions& options, CommandIo& io);

// Text output shows a Chat reply's parts apart: reasoning on io.err between [thinking] and
// [/thinking], each tool call on io.out as "[tool call NAME] ARGUMENTS".

// "EOS", "STOP_SEQUENCE", ... for a FinishReason.
std::string FinishReasonName(textgen::v1::FinishReason reason);

}  // namespace textgen::client
