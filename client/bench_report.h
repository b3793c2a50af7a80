#pragma once

// Turns the records of a bench run into the numbers `textgen bench` prints, as text or JSON.

#include <cstdint>
#include <map>
#include <string>

#include "client/bench_runner.h"
#include "client/bench_stats.h"
#include "nlohmann/json.hpp"

namespace textgen::client {

// Latency distributions are over successful (OK) regular requests; long-prompt injections are
// summarized on their own and excluded from everything else.
struct BenchSummary {
  BenchOptions options;
  std::string addr;
  double wall_seconds = 0;
  int ok = 0;
  int failed = 0;
  std::map<std::string, int> by_code;   // status code name -> regular requests
  int64_t output_tokens = 0;            // token ids received by regular requests (failed too)
  int short_requests = 0;               // OK but fewer than max_tokens tokens
  double output_tokens_per_second = 0;  // output_tokens / wall_seconds
  double requests_per_second = 0;       // ok / wall_seconds
  double tokens_per_message = 0;        // mean token ids per token-carrying message
  Distribution ttft;                    // all turns
  Distribution ttft_first_turn;         // turn 0 of each conversation
  Distribution ttft_followup_turns;     // turns 1.. (session KV cache reuse)
  Distribution itl;                     // per message gap, see RequestRecord::itl_seconds
  Distribution e2e;
  int long_prompt_ok = 0;
  int long_prompt_failed = 0;
  Distribution long_prompt_ttft;
};

BenchSummary SummarizeBench(const BenchOptions& options, const std::string& addr,
                            const BenchRun& run);

// One JSON object; latencies in seconds. Shape documented in docs/cli.md.
nlohmann::json BenchSummaryToJson(const BenchSummary& summary);

// Human-readable report; latencies in milliseconds.
std::string FormatBenchSummary(const BenchSummary& summary);

}  // namespace textgen::client
