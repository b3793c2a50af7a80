#include "client/bench_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/command_common.h"

namespace textgen::client {
namespace {

nlohmann::json DistributionToJson(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"min", d.min}, {"p50", d.p50},
          {"p90", d.p90},     {"p99", d.p99},   {"max", d.max}};
}

std::string DistributionRow(absl::string_view label, const Distribution& d) {
  if (d.count == 0) return absl::StrFormat("  %-22s %8d\n", label, 0);
  return absl::StrFormat("  %-22s %8d %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", label, d.count,
                         d.mean * 1e3, d.min * 1e3, d.p50 * 1e3, d.p90 * 1e3, d.p99 * 1e3,
                         d.max * 1e3);
}

}  // namespace

BenchSummary SummarizeBench(const BenchOptions& options, const std::string& addr,
                            const BenchRun& run) {
  BenchSummary s;
  s.options = options;
  s.addr = addr;
  s.wall_seconds = run.wall_seconds;
  std::vector<double> ttft, ttft_first, ttft_followup, itl, e2e, long_ttft;
  int64_t token_messages = 0;
  for (const RequestRecord& r : run.records) {
    bool ok = r.code == grpc::StatusCode::OK;
    if (r.long_prompt) {
      ok ? ++s.long_prompt_ok : ++s.long_prompt_failed;
      if (ok && r.ttft_seconds >= 0) long_ttft.push_back(r.ttft_seconds);
      continue;
    }
    ++s.by_code[StatusCodeName(r.code)];
    s.output_tokens += r.output_tokens;
    token_messages += r.token_messages;
    if (!ok) {
      ++s.failed;
      continue;
    }
    ++s.ok;
    if (r.output_tokens < options.max_tokens) ++s.short_requests;
    if (r.ttft_seconds >= 0) {
      ttft.push_back(r.ttft_seconds);
      (r.turn == 0 ? ttft_first : ttft_followup).push_back(r.ttft_seconds);
    }
    itl.insert(itl.end(), r.itl_seconds.begin(), r.itl_seconds.end());
    e2e.push_back(r.e2e_seconds);
  }
  if (s.wall_seconds > 0) {
    s.output_tokens_per_second = static_cast<double>(s.output_tokens) / s.wall_seconds;
    s.requests_per_second = s.ok / s.wall_seconds;
  }
  if (token_messages > 0) {
    s.tokens_per_message = static_cast<double>(s.output_tokens) / token_messages;
  }
  s.ttft = Summarize(std::move(ttft));
  s.ttft_first_turn = Summarize(std::move(ttft_first));
  s.ttft_followup_turns = Summarize(std::move(ttft_followup));
  s.itl = Summarize(std::move(itl));
  s.e2e = Summarize(std::move(e2e));
  s.long_prompt_ttft = Summarize(std::move(long_ttft));
  return s;
}

nlohmann::json BenchSummaryToJson(const BenchSummary& s) {
  const BenchOptions& o = s.options;
  nlohmann::json json = {
      {"config",
       {{"addr", s.addr},
        {"concurrency", o.concurrency},
        {"requests", o.requests},
        {"prompt_tokens", o.prompt_tokens},
        {"max_tokens", o.max_tokens},
        {"session_turns", o.session_turns},
        {"arrival_rate", o.arrival_rate},
        {"long_prompt_tokens", o.long_prompt_tokens},
        {"long_prompt_every_seconds", o.long_prompt_every_seconds},
        {"warmup", o.warmup},
        {"seed", o.seed}}},
      {"wall_seconds", s.wall_seconds},
      {"requests",
       {{"ok", s.ok}, {"failed", s.failed}, {"by_code", s.by_code}, {"short", s.short_requests}}},
      {"output_tokens", s.output_tokens},
      {"output_tokens_per_second", s.output_tokens_per_second},
      {"requests_per_second", s.requests_per_second},
      {"tokens_per_message", s.tokens_per_message},
      {"ttft_seconds", DistributionToJson(s.ttft)},
      {"ttft_first_turn_seconds", DistributionToJson(s.ttft_first_turn)},
      {"ttft_followup_turn_seconds", DistributionToJson(s.ttft_followup_turns)},
      {"itl_seconds", DistributionToJson(s.itl)},
      {"e2e_seconds", DistributionToJson(s.e2e)},
      {"long_prompts",
       {{"ok", s.long_prompt_ok},
        {"failed", s.long_prompt_failed},
        {"ttft_seconds", DistributionToJson(s.long_prompt_ttft)}}},
  };
  return json;
}

std::string FormatBenchSummary(const BenchSummary& s) {
  const BenchOptions& o = s.options;
  std::string out = absl::StrFormat(
      "textgen bench: %s, %d requests, concurrency %d, %d prompt tokens, %d output tokens", s.addr,
      o.requests, o.concurrency, o.prompt_tokens, o.max_tokens);
  if (o.session_turns > 1) absl::StrAppendFormat(&out, ", %d-turn sessions", o.session_turns);
  if (o.arrival_rate > 0) absl::StrAppendFormat(&out, ", Poisson %.3g conv/s", o.arrival_rate);
  absl::StrAppend(&out, "\n");
  absl::StrAppendFormat(&out, "wall time              %.3f s\n", s.wall_seconds);
  absl::StrAppendFormat(&out, "requests               ok %d, failed %d (", s.ok, s.failed);
  absl::string_view separator;
  for (const auto& [code, count] : s.by_code) {
    absl::StrAppendFormat(&out, "%s%s %d", separator, code, count);
    separator = ", ";
  }
  absl::StrAppend(&out, ")\n");
  if (s.short_requests > 0) {
    absl::StrAppendFormat(&out, "short requests         %d OK with fewer than %d tokens\n",
                          s.short_requests, o.max_tokens);
  }
  absl::StrAppendFormat(&out, "output tokens          %d (%.1f tok/s aggregate)\n", s.output_tokens,
                        s.output_tokens_per_second);
  absl::StrAppendFormat(&out, "request throughput     %.3f req/s\n", s.requests_per_second);
  absl::StrAppendFormat(&out, "tokens per message     %.2f\n", s.tokens_per_message);
  absl::StrAppendFormat(&out, "latency (ms)%21s %9s %9s %9s %9s %9s %9s\n", "count", "mean", "min",
                        "p50", "p90", "p99", "max");
  absl::StrAppend(&out, DistributionRow("TTFT", s.ttft));
  if (o.session_turns > 1) {
    absl::StrAppend(&out, DistributionRow("TTFT first turn", s.ttft_first_turn));
    absl::StrAppend(&out, DistributionRow("TTFT follow-up turns", s.ttft_followup_turns));
  }
  absl::StrAppend(&out, DistributionRow("ITL (per message)", s.itl));
  absl::StrAppend(&out, DistributionRow("end-to-end", s.e2e));
  if (o.long_prompt_tokens > 0) {
    absl::StrAppend(&out, DistributionRow(absl::StrCat("TTFT long (", o.long_prompt_tokens, ")"),
                                          s.long_prompt_ttft));
    absl::StrAppendFormat(&out, "long prompts           ok %d, failed %d\n", s.long_prompt_ok,
                          s.long_prompt_failed);
  }
  return out;
}

}  // namespace textgen::client
