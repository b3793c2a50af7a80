// textgen bench: load generator against a live server.

#include <fstream>
#include <limits>
#include <ostream>
#include <sstream>

#include "client/bench_report.h"
#include "client/bench_runner.h"
#include "client/commands.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::client {
namespace {

constexpr CommandUsage kBenchUsage = {
    "bench",
    "--addr HOST:PORT --concurrency N --requests M --prompt-tokens P --max-tokens T [flags]",
    "Drives the server with N concurrent Generate streams, M requests in total, each a random\n"
    "(seeded) prompt of P token ids with ignore_eos so it yields exactly T tokens, then prints\n"
    "throughput and TTFT / inter-token / end-to-end latency percentiles (linear interpolation).\n"
    "ITL is measured per stream message: a message carrying k tokens counts as one gap.\n"
    "Exit codes: 0 all requests OK, 1 some failed (or GetModelInfo failed), 2 usage error."};

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

}  // namespace

int RunBench(const std::vector<std::string>& args, CommandIo& io) {
  ConnectionFlags connection;
  int64_t concurrency = 1, requests = 1, prompt_tokens = 32, max_tokens = 32, session_turns = 1,
          long_prompt_tokens = 0, warmup = 0;
  double arrival_rate = 0;
  std::optional<absl::Duration> long_prompt_every;
  std::optional<uint64_t> seed;
  bool json = false;
  std::string http_address;
  std::string json_schema_path, regex;
  std::vector<FlagSpec> specs;
  AddConnectionFlags(&connection, &specs);
  specs.push_back(IntFlag("concurrency", &concurrency, 1, 4096, "streams in flight (default 1)"));
  specs.push_back(IntFlag("requests", &requests, 1, kMaxInt, "measured requests (default 1)"));
  specs.push_back(IntFlag("prompt-tokens", &prompt_tokens, 1, kMaxInt,
                          "new prompt tokens per request (default 32)"));
  specs.push_back(
      IntFlag("max-tokens", &max_tokens, 1, kMaxInt, "tokens generated per request (default 32)"));
  specs.push_back(IntFlag("session-turns", &session_turns, 1, kMaxInt,
                          "K-turn conversations on one session each (default 1)"));
  specs.push_back(DoubleFlag("arrival-rate", &arrival_rate,
                             "Poisson conversation arrivals per second (default: closed loop)"));
  specs.push_back(IntFlag("long-prompt-tokens", &long_prompt_tokens, 0, kMaxInt,
                          "inject prompts of L tokens while streaming ..."));
  specs.push_back(
      DurationFlag("long-prompt-every", &long_prompt_every, "... one every DURATION (e.g. 2s)"));
  specs.push_back(IntFlag("warmup", &warmup, 0, kMaxInt, "unmeasured requests first (default 0)"));
  specs.push_back(OptionalUintFlag("seed", &seed, "prompt and sampling seed (default 1)"));
  specs.push_back(BoolFlag("json", &json, "print the results as one JSON object"));
  specs.push_back(
      StringFlag("http", &http_address, "HOST:PORT",
                 "send the requests to the OpenAI HTTP API at HOST:PORT (streaming "
                 "/v1/completions) instead of gRPC; --addr still answers GetModelInfo"));
  specs.push_back(StringFlag("json-schema", &json_schema_path, "FILE",
                             "constrain every request to the JSON Schema in FILE"));
  specs.push_back(StringFlag("regex", &regex, "RE", "constrain every request to the regex"));
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed = ParseCommandLine(args, specs, kBenchUsage, io, &exit_code);
  if (!parsed) return exit_code;
  if (!parsed->positional.empty()) {
    return UsageError(kBenchUsage, "unexpected argument '" + parsed->positional[0] + "'", io);
  }

  BenchOptions options;
  if (!json_schema_path.empty()) {
    std::ifstream in(json_schema_path, std::ios::binary);
    if (!in) return UsageError(kBenchUsage, "--json-schema: cannot read " + json_schema_path, io);
    std::ostringstream text;
    text << in.rdbuf();
    options.json_schema = text.str();
  }
  options.regex = regex;
  options.concurrency = static_cast<int>(concurrency);
  options.requests = static_cast<int>(requests);
  options.prompt_tokens = static_cast<int>(prompt_tokens);
  options.max_tokens = static_cast<int>(max_tokens);
  options.session_turns = static_cast<int>(session_turns);
  options.arrival_rate = arrival_rate;
  options.long_prompt_tokens = static_cast<int>(long_prompt_tokens);
  options.long_prompt_every_seconds =
      long_prompt_every ? absl::ToDoubleSeconds(*long_prompt_every) : 0;
  options.warmup = static_cast<int>(warmup);
  options.seed = seed.value_or(1);
  options.timeout = connection.timeout;
  options.http_address = http_address;
  options.api_key = connection.api_key;

  std::shared_ptr<grpc::Channel> channel = MakeChannel(connection);
  textgen::v1::ModelInfo info;
  {
    grpc::ClientContext context;
    ConfigureCall(connection, &context);
    context.set_deadline(
        absl::ToChronoTime(absl::Now() + connection.timeout.value_or(absl::Seconds(30))));
    grpc::Status status = textgen::v1::TextGeneration::NewStub(channel)->GetModelInfo(
        &context, textgen::v1::GetModelInfoRequest(), &info);
    if (!status.ok()) return RpcError(kBenchUsage, "GetModelInfo", status, io);
  }
  BenchModel model;
  model.vocab_size = static_cast<int>(info.vocab_size());
  model.context_length = static_cast<int>(info.context_length());
  model.max_new_tokens_limit = static_cast<int>(info.max_new_tokens_limit());
  model.bos_id = info.special_tokens().bos_id();
  model.eos_id = info.special_tokens().eos_id();
  if (absl::Status valid = ValidateBenchOptions(options, model); !valid.ok()) {
    return UsageError(kBenchUsage, valid.message(), io);
  }

  BenchRun run = RunBenchLoad(channel, options, model);
  BenchSummary summary = SummarizeBench(options, connection.addr, run);
  if (json) {
    io.out << BenchSummaryToJson(summary).dump(2) << "\n";
  } else {
    io.out << FormatBenchSummary(summary);
  }
  return summary.failed == 0 ? kExitOk : kExitRpcError;
}

}  // namespace textgen::client
