#pragma once

// The `textgen bench` load generator: drives a live server with concurrent Generate streams
// and records, per request, client-side timings taken from stream message arrivals.
//
// Closed loop by default: `concurrency` worker threads (sharing one channel, one stub each)
// each run conversations back to back until `requests` requests are done. With an arrival
// rate, conversation starts follow a seeded Poisson process instead: a worker waits for its
// conversation's arrival time; when all workers are busy the start is late, and TTFT (measured
// from the actual send) does not include that lateness. Prompts are random token ids in
// [0, vocab_size) minus BOS/EOS, seeded per conversation, sent as TokenIds with ignore_eos so
// each request yields max_tokens tokens.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/support/status.h"

namespace textgen::client {

struct BenchOptions {
  int concurrency = 1;                    // worker threads = streams in flight at most
  int requests = 1;                       // measured requests in total (turns count singly)
  int prompt_tokens = 32;                 // new prompt tokens per request (per turn)
  int max_tokens = 32;                    // tokens generated per request
  int session_turns = 1;                  // >1: K-turn conversations on one session
  double arrival_rate = 0;                // conversations per second (Poisson); 0 = closed loop
  int long_prompt_tokens = 0;             // >0: inject prompts of this length ...
  double long_prompt_every_seconds = 0;   // ... every this many seconds (1 output token each)
  int warmup = 0;                         // unmeasured requests run before the measurement
  uint64_t seed = 1;                      // prompts and sampling seeds
  std::optional<absl::Duration> timeout;  // per request deadline
  // HOST:PORT of the OpenAI-compatible HTTP API: requests go there (streaming
  // /v1/completions) instead of to the gRPC Generate RPC. Single-turn only.
  std::string http_address;
  std::string api_key;  // sent as "authorization: Bearer KEY" (gRPC metadata or HTTP header)
  // An output constraint on every request (structured output): a JSON Schema's text or a
  // regex; empty = unconstrained. With ignore_eos a request still yields max_tokens unless
  // its language ends first.
  std::string json_schema;
  std::string regex;
};

// What the runner needs to know about the served model (from GetModelInfo).
struct BenchModel {
  int vocab_size = 0;
  int context_length = 0;        // 0 = unknown (no check)
  int max_new_tokens_limit = 0;  // 0 = unknown (no check)
  int bos_id = -1;
  int eos_id = -1;
};

// One finished (or failed) request as seen by the client.
struct RequestRecord {
  grpc::StatusCode code = grpc::StatusCode::OK;
  bool long_prompt = false;  // an injected long prompt, reported separately
  int turn = 0;              // 0-based turn within its conversation
  int prompt_tokens = 0;
  int output_tokens = 0;     // token ids received
  int token_messages = 0;    // stream messages that carried at least one token id
  double ttft_seconds = -1;  // send -> first token-carrying message; -1 = none arrived
  double e2e_seconds = 0;    // send -> stream finished
  // Inter-token latency: one gap per token-carrying message after the first, measured between
  // consecutive message arrivals. A message carrying k tokens contributes ONE gap (the server
  // sends them together, so the client cannot see finer gaps); token counts are kept apart.
  std::vector<double> itl_seconds;
};

struct BenchRun {
  double wall_seconds = 0;  // first measured request sent -> last one finished
  std::vector<RequestRecord> records;
};

// InvalidArgument naming the flag and limit when the options cannot work with `model`
// (e.g. the last turn's prompt plus max_tokens exceeds the context).
absl::Status ValidateBenchOptions(const BenchOptions& options, const BenchModel& model);

// Runs the warmup then the measured load. Returns once every request has finished.
// Call ValidateBenchOptions first. Blocks the calling thread; uses its own worker threads.
BenchRun RunBenchLoad(const std::shared_ptr<grpc::ChannelInterface>& channel,
                      const BenchOptions& options, const BenchModel& model);

}  // namespace textgen::client
