// The bench summary and its JSON shape, from hand-made records (no server).

#include "client/bench_report.h"

#include <gtest/gtest.h>

namespace textgen::client {
namespace {

RequestRecord Record(grpc::StatusCode code, int turn, int tokens, double ttft,
                     std::vector<double> itl, double e2e) {
  RequestRecord r;
  r.code = code;
  r.turn = turn;
  r.output_tokens = tokens;
  r.token_messages = tokens;
  r.ttft_seconds = ttft;
  r.itl_seconds = std::move(itl);
  r.e2e_seconds = e2e;
  return r;
}

BenchRun SampleRun() {
  BenchRun run;
  run.wall_seconds = 2.0;
  run.records.push_back(Record(grpc::StatusCode::OK, 0, 3, 0.10, {0.01, 0.03}, 0.2));
  run.records.push_back(Record(grpc::StatusCode::OK, 1, 3, 0.02, {0.02, 0.04}, 0.1));
  run.records.push_back(Record(grpc::StatusCode::OK, 0, 2, 0.30, {0.05}, 0.4));  // short
  run.records.push_back(Record(grpc::StatusCode::RESOURCE_EXHAUSTED, 0, 0, -1, {}, 0.001));
  RequestRecord long_prompt = Record(grpc::StatusCode::OK, 0, 1, 0.9, {}, 0.9);
  long_prompt.long_prompt = true;
  run.records.push_back(long_prompt);
  return run;
}

BenchOptions SampleOptions() {
  BenchOptions o;
  o.concurrency = 2;
  o.requests = 4;
  o.prompt_tokens = 8;
  o.max_tokens = 3;
  o.session_turns = 2;
  o.long_prompt_tokens = 100;
  o.long_prompt_every_seconds = 1;
  return o;
}

TEST(BenchReportTest, SummaryCountsAndSplitsTurns) {
  BenchSummary s = SummarizeBench(SampleOptions(), "host:1", SampleRun());
  EXPECT_EQ(s.ok, 3);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.by_code.at("OK"), 3);
  EXPECT_EQ(s.by_code.at("RESOURCE_EXHAUSTED"), 1);
  EXPECT_EQ(s.short_requests, 1);
  EXPECT_EQ(s.output_tokens, 8);  // the long prompt's token is not counted
  EXPECT_DOUBLE_EQ(s.output_tokens_per_second, 4.0);
  EXPECT_DOUBLE_EQ(s.requests_per_second, 1.5);
  EXPECT_DOUBLE_EQ(s.tokens_per_message, 1.0);
  EXPECT_EQ(s.ttft.count, 3u);
  EXPECT_DOUBLE_EQ(s.ttft.p50, 0.10);
  EXPECT_EQ(s.ttft_first_turn.count, 2u);
  EXPECT_NEAR(s.ttft_first_turn.p50, 0.20, 1e-12);  // halfway between 0.10 and 0.30
  EXPECT_EQ(s.ttft_followup_turns.count, 1u);
  EXPECT_DOUBLE_EQ(s.ttft_followup_turns.max, 0.02);
  EXPECT_EQ(s.itl.count, 5u);
  EXPECT_DOUBLE_EQ(s.itl.p50, 0.03);
  EXPECT_EQ(s.e2e.count, 3u);
  EXPECT_EQ(s.long_prompt_ok, 1);
  EXPECT_DOUBLE_EQ(s.long_prompt_ttft.p50, 0.9);
}

TEST(BenchReportTest, JsonShape) {
  nlohmann::json j = BenchSummaryToJson(SummarizeBench(SampleOptions(), "host:1", SampleRun()));
  ASSERT_TRUE(j.is_object());
  for (const char* key :
       {"config", "wall_seconds", "requests", "output_tokens", "output_tokens_per_second",
        "requests_per_second", "tokens_per_message", "ttft_seconds", "ttft_first_turn_seconds",
        "ttft_followup_turn_seconds", "itl_seconds", "e2e_seconds", "long_prompts"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["config"]["addr"], "host:1");
  EXPECT_EQ(j["config"]["session_turns"], 2);
  EXPECT_EQ(j["requests"]["ok"], 3);
  EXPECT_EQ(j["requests"]["failed"], 1);
  EXPECT_EQ(j["requests"]["by_code"]["RESOURCE_EXHAUSTED"], 1);
  for (const char* dist : {"ttft_seconds", "ttft_first_turn_seconds", "ttft_followup_turn_seconds",
                           "itl_seconds", "e2e_seconds"}) {
    for (const char* field : {"count", "mean", "min", "p50", "p90", "p99", "max"}) {
      EXPECT_TRUE(j[dist][field].is_number()) << dist << "." << field;
    }
  }
  EXPECT_EQ(j["itl_seconds"]["count"], 5);
  EXPECT_DOUBLE_EQ(j["ttft_seconds"]["p50"].get<double>(), 0.10);
  EXPECT_EQ(j["long_prompts"]["ok"], 1);
  // Round trip through text stays an object.
  EXPECT_TRUE(nlohmann::json::parse(j.dump()).is_object());
}

TEST(BenchReportTest, TextReportNamesEveryRow) {
  std::string text = FormatBenchSummary(SummarizeBench(SampleOptions(), "host:1", SampleRun()));
  for (const char* row :
       {"wall time", "ok 3, failed 1", "RESOURCE_EXHAUSTED 1", "tok/s", "req/s", "TTFT first turn",
        "TTFT follow-up turns", "ITL (per message)", "end-to-end", "TTFT long (100)"}) {
    EXPECT_NE(text.find(row), std::string::npos) << row << "\n" << text;
  }
}

TEST(BenchReportTest, ValidateRejectsContextOverflowNamingNumbers) {
  BenchModel model;
  model.vocab_size = 500;
  model.context_length = 256;
  BenchOptions o;
  o.prompt_tokens = 50;
  o.max_tokens = 40;
  o.session_turns = 3;  // last prompt 150 + 80 = 230, + 40 = 270 > 256
  absl::Status s = ValidateBenchOptions(o, model);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("270"), absl::string_view::npos) << s.message();
  EXPECT_NE(s.message().find("256"), absl::string_view::npos) << s.message();
  o.session_turns = 2;  // 100 + 40 + 40 = 180
  EXPECT_TRUE(ValidateBenchOptions(o, model).ok());
  o.long_prompt_tokens = 10;  // without --long-prompt-every
  EXPECT_FALSE(ValidateBenchOptions(o, model).ok());
}

}  // namespace
}  // namespace textgen::client
