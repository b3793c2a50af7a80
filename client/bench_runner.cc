#include "client/bench_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "client/bench_http.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::client {
namespace {

using Clock = std::chrono::steady_clock;
using textgen::v1::TextGeneration;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Random prompt token ids, never BOS or EOS (they would end or restart the text).
class PromptSource {
 public:
  PromptSource(const BenchModel& model, uint64_t seed)
      : model_(model), rng_(seed), dist_(0, model.vocab_size - 1) {}

  void Append(int n, std::vector<int32_t>* ids) {
    for (int i = 0; i < n; ++i) {
      int32_t id;
      do {
        id = dist_(rng_);
      } while ((id == model_.bos_id || id == model_.eos_id) && model_.vocab_size > 2);
      ids->push_back(id);
    }
  }

 private:
  const BenchModel& model_;
  std::mt19937_64 rng_;
  std::uniform_int_distribution<int32_t> dist_;
};

// A conversation: `turns` requests on one session (no session when turns == 1).
struct Conversation {
  int turns = 1;
  Clock::duration arrival_offset{};  // start time relative to the run start (Poisson mode)
};

// Splits `requests` into conversations of `session_turns` (the last may be shorter) and, with
// an arrival rate, gives each a start offset drawn from a seeded Poisson process.
std::vector<Conversation> PlanConversations(const BenchOptions& options) {
  std::vector<Conversation> plan;
  std::mt19937_64 rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
  double t = 0;
  for (int left = options.requests; left > 0; left -= options.session_turns) {
    Conversation c;
    c.turns = std::min(left, options.session_turns);
    if (options.arrival_rate > 0) {
      c.arrival_offset =
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t));
      t += std::exponential_distribution<double>(options.arrival_rate)(rng);
    }
    plan.push_back(c);
  }
  return plan;
}

// One streaming request; appends the generated ids to `output_ids` when given.
RequestRecord RunOne(TextGeneration::Stub& stub, const BenchOptions& options,
                     const std::vector<int32_t>& prompt, int max_tokens,
                     const std::string& session_id, uint64_t seed,
                     std::vector<int32_t>* output_ids) {
  textgen::v1::GenerateRequest request;
  request.mutable_tokens()->mutable_ids()->Assign(prompt.begin(), prompt.end());
  request.set_session_id(session_id);
  request.mutable_sampling()->set_seed(seed);
  request.mutable_stopping()->set_max_new_tokens(static_cast<uint32_t>(max_tokens));
  request.mutable_stopping()->set_ignore_eos(true);
  if (!options.json_schema.empty())
    request.mutable_constraint()->set_json_schema(options.json_schema);
  if (!options.regex.empty()) request.mutable_constraint()->set_regex(options.regex);

  RequestRecord record;
  record.prompt_tokens = static_cast<int>(prompt.size());
  grpc::ClientContext context;
  if (options.timeout) context.set_deadline(absl::ToChronoTime(absl::Now() + *options.timeout));
  if (!options.api_key.empty()) context.AddMetadata("authorization", "Bearer " + options.api_key);
  if (!session_id.empty()) context.AddMetadata("x-session-id", session_id);
  Clock::time_point start = Clock::now();
  Clock::time_point last_token_message = start;
  std::unique_ptr<grpc::ClientReader<textgen::v1::GenerateResponse>> reader =
      stub.Generate(&context, request);
  textgen::v1::GenerateResponse response;
  while (reader->Read(&response)) {
    Clock::time_point now = Clock::now();
    if (response.token_ids_size() == 0) continue;
    if (record.token_messages == 0) {
      record.ttft_seconds = Seconds(now - start);
    } else {
      record.itl_seconds.push_back(Seconds(now - last_token_message));
    }
    last_token_message = now;
    ++record.token_messages;
    record.output_tokens += response.token_ids_size();
    if (output_ids != nullptr) {
      output_ids->insert(output_ids->end(), response.token_ids().begin(),
                         response.token_ids().end());
    }
  }
  record.code = reader->Finish().error_code();
  record.e2e_seconds = Seconds(Clock::now() - start);
  return record;
}

void DeleteSession(TextGeneration::Stub& stub, const std::string& session_id,
                   const std::string& api_key) {
  textgen::v1::DeleteSessionRequest request;
  request.set_session_id(session_id);
  textgen::v1::DeleteSessionResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!api_key.empty()) context.AddMetadata("authorization", "Bearer " + api_key);
  context.AddMetadata("x-session-id", session_id);
  (void)stub.DeleteSession(&context, request, &response);  // best effort cleanup
}

// Runs `plan` with options.concurrency workers. Thread contract: each worker owns its stub and
// its record vector; the only shared state is the atomic conversation index.
BenchRun RunPlan(const std::shared_ptr<grpc::ChannelInterface>& channel,
                 const BenchOptions& options, const BenchModel& model,
                 const std::vector<Conversation>& plan, bool with_long_prompts) {
  const uint64_t nonce = std::random_device()();
  std::atomic<size_t> next{0};
  int workers = std::max(1, std::min<int>(options.concurrency, static_cast<int>(plan.size())));
  std::vector<std::vector<RequestRecord>> per_worker(workers + 1);
  Clock::time_point run_start = Clock::now();

  auto worker = [&](int w) {
    std::unique_ptr<TextGeneration::Stub> stub = TextGeneration::NewStub(channel);
    std::optional<HttpBenchClient> http;
    if (!options.http_address.empty()) http.emplace(options.http_address);
    for (size_t i = next++; i < plan.size(); i = next++) {
      const Conversation& c = plan[i];
      if (options.arrival_rate > 0) std::this_thread::sleep_until(run_start + c.arrival_offset);
      uint64_t conversation_seed = options.seed * 1000003ULL + i;
      PromptSource source(model, conversation_seed);
      std::string session =
          c.turns > 1 ? absl::StrFormat("bench-%08x-%d", nonce, i) : std::string();
      std::vector<int32_t> prompt;
      for (int turn = 0; turn < c.turns; ++turn) {
        source.Append(options.prompt_tokens, &prompt);
        std::vector<int32_t> output;
        RequestRecord r =
            http ? http->Run(options, prompt, options.max_tokens, conversation_seed + turn)
                 : RunOne(*stub, options, prompt, options.max_tokens, session,
                          conversation_seed + turn, c.turns > 1 ? &output : nullptr);
        r.turn = turn;
        per_worker[w].push_back(std::move(r));
        // Next turn's prompt = this prompt + this output + P new tokens.
        prompt.insert(prompt.end(), output.begin(), output.end());
      }
      if (!session.empty()) DeleteSession(*stub, session, options.api_key);
    }
  };

  absl::Notification done;
  std::thread long_prompts;
  if (with_long_prompts && options.long_prompt_tokens > 0) {
    long_prompts = std::thread([&] {
      std::unique_ptr<TextGeneration::Stub> stub = TextGeneration::NewStub(channel);
      std::optional<HttpBenchClient> http;
      if (!options.http_address.empty()) http.emplace(options.http_address);
      PromptSource source(model, options.seed ^ 0x5bd1e995ULL);
      uint64_t n = 0;
      while (
          !done.WaitForNotificationWithTimeout(absl::Seconds(options.long_prompt_every_seconds))) {
        std::vector<int32_t> prompt;
        source.Append(options.long_prompt_tokens, &prompt);
        RequestRecord r = http ? http->Run(options, prompt, /*max_tokens=*/1, ++n)
                               : RunOne(*stub, options, prompt, /*max_tokens=*/1, "", ++n, nullptr);
        r.long_prompt = true;
        per_worker[workers].push_back(std::move(r));
      }
    });
  }
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) threads.emplace_back(worker, w);
  for (std::thread& t : threads) t.join();
  BenchRun run;
  run.wall_seconds = Seconds(Clock::now() - run_start);
  done.Notify();
  if (long_prompts.joinable()) long_prompts.join();
  for (std::vector<RequestRecord>& records : per_worker) {
    for (RequestRecord& r : records) run.records.push_back(std::move(r));
  }
  return run;
}

}  // namespace

absl::Status ValidateBenchOptions(const BenchOptions& o, const BenchModel& model) {
  auto at_least = [](const char* flag, double value, double min) -> absl::Status {
    if (value < min) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--%s must be >= %g, got %g", flag, min, value));
    }
    return absl::OkStatus();
  };
  for (absl::Status s :
       {at_least("concurrency", o.concurrency, 1), at_least("requests", o.requests, 1),
        at_least("prompt-tokens", o.prompt_tokens, 1), at_least("max-tokens", o.max_tokens, 1),
        at_least("session-turns", o.session_turns, 1), at_least("arrival-rate", o.arrival_rate, 0),
        at_least("long-prompt-tokens", o.long_prompt_tokens, 0), at_least("warmup", o.warmup, 0)}) {
    if (!s.ok()) return s;
  }
  if (!o.http_address.empty() && o.session_turns > 1) {
    return absl::InvalidArgumentError(
        "--session-turns > 1 needs the gRPC path (the HTTP API returns text, not token ids)");
  }
  if ((o.long_prompt_tokens > 0) != (o.long_prompt_every_seconds > 0)) {
    return absl::InvalidArgumentError(
        "--long-prompt-tokens and --long-prompt-every must be given together (both > 0)");
  }
  if (model.vocab_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("server reports vocab_size %d; cannot make prompts", model.vocab_size));
  }
  if (model.max_new_tokens_limit > 0 && o.max_tokens > model.max_new_tokens_limit) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--max-tokens %d exceeds the server's max_new_tokens_limit %d",
                        o.max_tokens, model.max_new_tokens_limit));
  }
  if (model.context_length > 0) {
    // The last turn's prompt holds every earlier prompt and output, plus its own P tokens.
    int64_t last_prompt =
        int64_t{o.prompt_tokens} * o.session_turns + int64_t{o.max_tokens} * (o.session_turns - 1);
    if (last_prompt + o.max_tokens > model.context_length) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the last turn needs %d prompt + %d new tokens = %d, over the model context of %d "
          "(lower --prompt-tokens, --max-tokens or --session-turns)",
          last_prompt, o.max_tokens, last_prompt + o.max_tokens, model.context_length));
    }
    if (o.long_prompt_tokens + 1 > model.context_length) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--long-prompt-tokens %d + 1 exceeds the model context of %d",
                          o.long_prompt_tokens, model.context_length));
    }
  }
  return absl::OkStatus();
}

BenchRun RunBenchLoad(const std::shared_ptr<grpc::ChannelInterface>& channel,
                      const BenchOptions& options, const BenchModel& model) {
  if (options.warmup > 0) {
    BenchOptions warmup = options;
    warmup.requests = options.warmup;
    warmup.session_turns = 1;
    warmup.arrival_rate = 0;
    warmup.seed = options.seed + 0x77;
    (void)RunPlan(channel, warmup, model, PlanConversations(warmup), /*with_long_prompts=*/false);
  }
  return RunPlan(channel, options, model, PlanConversations(options), /*with_long_prompts=*/true);
}

}  // namespace textgen::client
