// Command-line parsing: the table-driven parser, value parsers, the generation flags' mapping
// onto GenerateRequest, and usage errors (exit 2) of the CLI entry point.

#include "client/flag_parser.h"

#include <gtest/gtest.h>

#include <sstream>

#include "client/commands.h"
#include "client/generation_flags.h"

namespace textgen::client {
namespace {

struct Flags {
  bool verbose = false;
  std::string addr;
  int64_t top_k = 0;
  std::vector<std::string> stop;
  std::optional<double> temperature;
  std::optional<absl::Duration> timeout;
  std::vector<FlagSpec> specs;

  Flags() {
    specs.push_back(BoolFlag("verbose", &verbose, "v"));
    specs.push_back(StringFlag("addr", &addr, "HOST:PORT", "a"));
    specs.push_back(IntFlag("top-k", &top_k, 0, 100, "k"));
    specs.push_back(RepeatedStringFlag("stop", &stop, "STR", "s"));
    specs.push_back(OptionalDoubleFlag("temperature", &temperature, "t"));
    specs.push_back(DurationFlag("timeout", &timeout, "d"));
  }
};

TEST(FlagParserTest, ParsesBothSpellingsRepeatedAndPositionals) {
  Flags f;
  absl::StatusOr<ParsedArgs> parsed =
      ParseFlags({"--addr", "h:1", "--top-k=7", "--stop", "a", "--stop=b c", "--verbose", "prompt",
                  "--temperature", "0.5", "-", "--", "--not-a-flag"},
                 f.specs);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(f.addr, "h:1");
  EXPECT_EQ(f.top_k, 7);
  EXPECT_EQ(f.stop, (std::vector<std::string>{"a", "b c"}));
  EXPECT_TRUE(f.verbose);
  EXPECT_EQ(f.temperature, 0.5);
  EXPECT_EQ(parsed->positional, (std::vector<std::string>{"prompt", "-", "--not-a-flag"}));
  EXPECT_FALSE(parsed->help);
}

TEST(FlagParserTest, HelpIsReported) {
  Flags f;
  EXPECT_TRUE(ParseFlags({"-h"}, f.specs)->help);
  EXPECT_TRUE(ParseFlags({"--top-k", "1", "--help"}, f.specs)->help);
}

TEST(FlagParserTest, ErrorsNameTheFlagAndValue) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {{"--top-k", "abc"}, "--top-k: expected an integer, got 'abc'"},
           {{"--top-k=1.5"}, "--top-k: expected an integer, got '1.5'"},
           {{"--top-k", "101"}, "--top-k must be in [0, 100], got 101"},
           {{"--top-k", "-1"}, "--top-k must be in [0, 100], got -1"},
           {{"--temperature", "hot"}, "--temperature: expected a finite number, got 'hot'"},
           {{"--temperature", "nan"}, "--temperature: expected a finite number, got 'nan'"},
           {{"--temperature", "inf"}, "--temperature: expected a finite number, got 'inf'"},
           {{"--bogus"}, "unknown flag --bogus"},
           {{"-x"}, "unknown flag -x"},
           {{"--addr"}, "flag --addr needs a value (HOST:PORT)"},
           {{"--verbose=yes"}, "flag --verbose takes no value, got 'yes'"},
           {{"--timeout", "soon"}, "--timeout: expected a duration"},
           {{"--timeout", "0s"}, "--timeout: duration must be positive"},
           {{"--timeout", "-2"}, "--timeout: duration must be positive"},
       }) {
    Flags f;
    absl::StatusOr<ParsedArgs> parsed = ParseFlags(c.args, f.specs);
    ASSERT_FALSE(parsed.ok()) << c.args[0];
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(c.expected), absl::string_view::npos)
        << parsed.status().message();
  }
}

TEST(FlagParserTest, DurationsAcceptAbslSyntaxAndBareSeconds) {
  EXPECT_EQ(*ParseDurationFlag("t", "250ms"), absl::Milliseconds(250));
  EXPECT_EQ(*ParseDurationFlag("t", "1.5m"), absl::Seconds(90));
  EXPECT_EQ(*ParseDurationFlag("t", "2"), absl::Seconds(2));
  EXPECT_FALSE(ParseDurationFlag("t", "inf").ok());
}

TEST(FlagParserTest, UintRejectsNegative) {
  EXPECT_EQ(*ParseUint("seed", "18446744073709551615"), 18446744073709551615ULL);
  EXPECT_FALSE(ParseUint("seed", "-1").ok());
  EXPECT_FALSE(ParseUint("seed", "18446744073709551616").ok());
}

TEST(GenerationFlagsTest, MapsOntoRequestAndLeavesUnsetOptionalsUnset) {
  GenerationFlags flags;
  std::vector<FlagSpec> specs;
  AddGenerationFlags(&flags, &specs);
  ASSERT_TRUE(ParseFlags({"--temperature",
                          "0",
                          "--top-k",
                          "40",
                          "--seed",
                          "42",
                          "--logit-bias",
                          "13=-100",
                          "--logit-bias=7=2.5",
                          "--max-tokens",
                          "16",
                          "--min-tokens",
                          "2",
                          "--stop",
                          "\n\n",
                          "--stop-token",
                          "2",
                          "--ignore-eos",
                          "--logprobs",
                          "3",
                          "--session",
                          "s1",
                          "--echo"},
                         specs)
                  .ok());
  textgen::v1::GenerateRequest request;
  FillGenerateRequest(flags, &request);
  const textgen::v1::SamplingParameters& s = request.sampling();
  EXPECT_TRUE(s.has_temperature());
  EXPECT_EQ(s.temperature(), 0.0f);
  EXPECT_EQ(s.top_k(), 40);
  EXPECT_FALSE(s.has_top_p());
  EXPECT_FALSE(s.has_repetition_penalty());
  EXPECT_EQ(s.seed(), 42u);
  EXPECT_EQ(s.logit_bias().at(13), -100.0f);
  EXPECT_EQ(s.logit_bias().at(7), 2.5f);
  EXPECT_EQ(request.stopping().max_new_tokens(), 16u);
  EXPECT_EQ(request.stopping().min_new_tokens(), 2u);
  EXPECT_EQ(request.stopping().stop(0), "\n\n");
  EXPECT_EQ(request.stopping().stop_token_ids(0), 2);
  EXPECT_TRUE(request.stopping().ignore_eos());
  EXPECT_TRUE(request.output().logprobs());
  EXPECT_EQ(request.output().top_logprobs(), 3u);
  EXPECT_TRUE(request.output().echo());
  EXPECT_EQ(request.session_id(), "s1");

  GenerationFlags defaults;
  textgen::v1::GenerateRequest plain;
  FillGenerateRequest(defaults, &plain);
  EXPECT_FALSE(plain.sampling().has_temperature());
  EXPECT_FALSE(plain.sampling().has_seed());
  EXPECT_FALSE(plain.output().logprobs());
}

TEST(GenerationFlagsTest, BadLogitBiasAndLogprobsRange) {
  for (std::vector<std::string> args : {std::vector<std::string>{"--logit-bias", "13"},
                                        {"--logit-bias", "x=1"},
                                        {"--logit-bias", "13=big"},
                                        {"--logprobs", "21"},
                                        {"--max-tokens", "-1"}}) {
    GenerationFlags flags;
    std::vector<FlagSpec> specs;
    AddGenerationFlags(&flags, &specs);
    EXPECT_FALSE(ParseFlags(args, specs).ok()) << args[0] << " " << args[1];
  }
}

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

CliResult RunCli(const std::vector<std::string>& args) {
  std::istringstream in;
  std::ostringstream out, err;
  CommandIo io{in, out, err};
  int code = RunTextgen(args, io);
  return {code, out.str(), err.str()};
}

TEST(CliUsageTest, UsageErrorsExitTwoWithoutContactingAServer) {
  // Port 1 is never listened on; a usage error must be reported before any RPC.
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {},
           {"frobnicate"},
           {"generate", "--addr", "127.0.0.1:1", "--top-k", "abc", "hi"},
           {"generate", "--addr", "127.0.0.1:1", "--no-such-flag"},
           {"generate", "--addr", "127.0.0.1:1", "two", "prompts"},
           {"tokenize", "--addr", "127.0.0.1:1"},
           {"detokenize", "--addr", "127.0.0.1:1", "1", "x"},
           {"delete-session", "--addr", "127.0.0.1:1"},
           {"info", "--addr", "127.0.0.1:1", "extra"},
           {"bench", "--addr", "127.0.0.1:1", "--concurrency", "0"},
           {"bench", "--addr", "127.0.0.1:1", "--requests", "ten"},
           {"chat", "--addr", "127.0.0.1:1", "--temperature", "warm"},
           {"health", "--addr", "127.0.0.1:1", "--timeout", "later"},
       }) {
    CliResult r = RunCli(args);
    EXPECT_EQ(r.code, kExitUsage) << (args.empty() ? "(none)" : args[0]) << ": " << r.err;
    EXPECT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find("failed:"), std::string::npos) << r.err;  // no RPC was made
  }
}

TEST(CliUsageTest, HelpExitsZeroOnStdout) {
  for (const char* command : {"generate", "chat", "tokenize", "detokenize", "info", "health",
                              "delete-session", "bench"}) {
    CliResult r = RunCli({command, "--help"});
    EXPECT_EQ(r.code, kExitOk) << command;
    EXPECT_EQ(r.out.rfind(std::string("Usage: textgen ") + command, 0), 0u) << r.out;
    EXPECT_NE(r.out.find("--addr"), std::string::npos) << command;
  }
  CliResult top = RunCli({"--help"});
  EXPECT_EQ(top.code, kExitOk);
  EXPECT_NE(top.out.find("bench"), std::string::npos);
}

}  // namespace
}  // namespace textgen::client
