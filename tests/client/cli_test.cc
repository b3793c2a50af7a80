// The textgen subcommands end to end against FakeServer (a scripted in-process gRPC server).

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_split.h"
#include "client/commands.h"
#include "client/health_codec.h"
#include "nlohmann/json.hpp"
#include "tests/client/fake_server.h"
#include "tests/testing/temp_files.h"

namespace textgen::client {
namespace {

using testing::FakeServer;

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

class CliTest : public ::testing::Test {
 protected:
  CliResult Run(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin() + 1, {"--addr", server_.addr()});
    std::istringstream in(input);
    std::ostringstream out, err;
    CommandIo io{in, out, err};
    int code = RunTextgen(args, io);
    return {code, out.str(), err.str()};
  }

  FakeServer server_;
};

TEST_F(CliTest, GenerateStreamsExactlyTheText) {
  CliResult r = Run({"generate", "--max-tokens", "3", "--seed", "5", "Once upon"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "tok0 tok1 tok2 ");
  EXPECT_EQ(r.err, "");
  std::vector<textgen::v1::GenerateRequest> requests = server_.service().requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].text(), "Once upon");
  EXPECT_EQ(requests[0].stopping().max_new_tokens(), 3u);
  EXPECT_EQ(requests[0].sampling().seed(), 5u);
}

TEST_F(CliTest, GenerateReadsThePromptFromStdin) {
  CliResult r = Run({"generate", "--max-tokens", "1", "-"}, "line one\nline two\n");
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "tok0 ");
  EXPECT_EQ(server_.service().requests().at(0).text(), "line one\nline two\n");
  Run({"generate", "--max-tokens", "1"}, "no dash");
  EXPECT_EQ(server_.service().requests().at(1).text(), "no dash");
}

TEST_F(CliTest, GenerateVerbosePrintsFinishOnStderrOnly) {
  server_.service().tokens_per_message = 2;
  CliResult r = Run({"generate", "--max-tokens", "3", "--verbose", "a b c"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out, "tok0 tok1 tok2 ");
  EXPECT_NE(r.err.find("reason=LENGTH"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("prompt_tokens=3 cached_tokens=0 completion_tokens=3"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("seed=7"), std::string::npos) << r.err;
}

TEST_F(CliTest, GenerateJsonPrintsOneObjectPerResponse) {
  CliResult r = Run({"generate", "--max-tokens", "2", "--json", "hi"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << r.out;  // two token messages + the finished message
  nlohmann::json first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first["text"], "tok0 ");
  EXPECT_EQ(first["token_ids"], nlohmann::json::array({100}));
  nlohmann::json last = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(last["finished"]["reason"], "FINISH_REASON_LENGTH");
  EXPECT_EQ(last["finished"]["usage"]["completion_tokens"], 2);
}

TEST_F(CliTest, RpcErrorExitsOneWithCodeAndMessage) {
  CliResult r = Run({"generate", "please FAIL"});
  EXPECT_EQ(r.code, kExitRpcError);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("INVALID_ARGUMENT: prompt asked to fail"), std::string::npos) << r.err;
}

TEST_F(CliTest, UnreachableServerIsAnRpcError) {
  std::istringstream in;
  std::ostringstream out, err;
  CommandIo io{in, out, err};
  int code = RunTextgen({"info", "--addr", "127.0.0.1:1", "--timeout", "5s"}, io);
  EXPECT_EQ(code, kExitRpcError);
  EXPECT_NE(err.str().find("GetModelInfo failed: UNAVAILABLE"), std::string::npos) << err.str();
}

TEST_F(CliTest, TokenizeAndDetokenize) {
  CliResult r = Run({"tokenize", "hello world"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "1\t\"<s>\"\n10\t\"hello\"\n11\t\"world\"\n");
  r = Run({"tokenize", "--no-bos", "--ids-only", "hello world"});
  EXPECT_EQ(r.out, "10 11\n");
  r = Run({"detokenize", "5", "-3", "7"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "5|-3|7");
}

TEST_F(CliTest, TokenizeDashReadsStdin) {
  CliResult r = Run({"tokenize", "--ids-only", "-"}, "from stdin");
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "1 10 11\n");  // two words, not the one-character text "-"
}

TEST_F(CliTest, ParseSpecialIsSentOnlyWhenAsked) {
  Run({"tokenize", "<s>"});
  Run({"tokenize", "--parse-special", "<s>"});
  Run({"generate", "--max-tokens", "1", "--parse-special", "<s>hi"});
  Run({"generate", "--max-tokens", "1", "hi"});
  std::vector<textgen::v1::GenerateRequest> requests = server_.service().requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_TRUE(requests[0].parse_special());
  EXPECT_FALSE(requests[1].parse_special());
  std::vector<textgen::v1::TokenizeRequest> tokenizes = server_.service().tokenize_requests();
  ASSERT_EQ(tokenizes.size(), 2u);
  EXPECT_FALSE(tokenizes[0].parse_special());
  EXPECT_TRUE(tokenizes[1].parse_special());
}

TEST_F(CliTest, EmbedPrintsAJsonLinePerInput) {
  CliResult r =
      Run({"embed", "--dimensions", "4", "--no-normalize", "one two", "-"}, "three\n\nfour\n");
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "{\"index\": 0, \"embedding\": [7, 0.5]}\n"
            "{\"index\": 1, \"embedding\": [5, 1.5]}\n"
            "{\"index\": 2, \"embedding\": [4, 2.5]}\n"
            "{\"prompt_tokens\": 16, \"pooling\": \"last\"}\n");
  std::vector<textgen::v1::EmbedRequest> requests = server_.service().embed_requests();
  ASSERT_EQ(requests.size(), 1u);
  ASSERT_EQ(requests[0].inputs_size(), 3);  // stdin's empty line is no input
  EXPECT_EQ(requests[0].inputs(2).text(), "four");
  EXPECT_EQ(requests[0].dimensions(), 4u);
  ASSERT_TRUE(requests[0].has_normalize());
  EXPECT_FALSE(requests[0].normalize());

  // Bad input is refused before anything is sent.
  EXPECT_EQ(Run({"embed"}).code, kExitUsage);
  EXPECT_EQ(Run({"embed", "--dimensions", "-1", "x"}).code, kExitUsage);
  r = Run({"embed", "-"}, "ok\nbad \xff\n");
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("input is not valid UTF-8"), std::string::npos) << r.err;
  EXPECT_EQ(server_.service().embed_requests().size(), 1u);
}

TEST_F(CliTest, InvalidUtf8IsRefusedBeforeSending) {
  const std::string bad = std::string("ok \xff");  // byte 3 can never start a character
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"generate", "-"}, {"tokenize", "-"}}) {
    CliResult r = Run(args, bad);
    EXPECT_EQ(r.code, kExitUsage) << args[0];
    EXPECT_NE(r.err.find("input is not valid UTF-8 (invalid byte 0xFF at byte offset 3)"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("libprotobuf"), std::string::npos) << r.err;
  }
  CliResult r = Run({"generate", "truncated \xe2\x82"});
  EXPECT_NE(r.err.find("input is not valid UTF-8 (invalid byte 0xE2 at byte offset 10)"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(server_.service().requests().empty());
}

TEST_F(CliTest, ChatRefusesAnInvalidLineAndKeepsGoing) {
  CliResult r = Run({"chat", "--max-tokens", "1"}, "bad \xc3\x28\nfine\n");
  EXPECT_NE(
      r.err.find("line not sent: input is not valid UTF-8 (invalid byte 0xC3 at byte offset 4)"),
      std::string::npos)
      << r.err;
  std::vector<textgen::v1::ChatRequest> requests = server_.service().chat_requests();
  ASSERT_EQ(requests.size(), 1u);
  ASSERT_EQ(requests[0].messages_size(), 1);
  EXPECT_EQ(requests[0].messages(0).content(), "fine");
}

TEST_F(CliTest, PromptOverTheServersLimitIsRefusedNamingIt) {
  const std::string big(testing::kFakeMaxRequestBytes + 10, 'a');
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"generate", "-"}, {"tokenize", "-"}}) {
    CliResult r = Run(args, big);
    EXPECT_EQ(r.code, kExitUsage) << args[0];
    EXPECT_NE(r.err.find("over the server's limit of 65536 bytes"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--max-request-bytes"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(server_.service().requests().empty());
  // Below the limit it is sent; small prompts do not ask the server for its limit at all.
  const int calls = server_.service().model_info_calls;
  CliResult r = Run({"generate", "--max-tokens", "1", "-"}, std::string(60000, 'b'));
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(server_.service().model_info_calls, calls + 1);
  Run({"generate", "--max-tokens", "1", "short"});
  EXPECT_EQ(server_.service().model_info_calls, calls + 1);
  EXPECT_EQ(server_.service().requests().size(), 2u);
}

TEST_F(CliTest, InfoPrettyAndJson) {
  CliResult r = Run({"info"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("name:                  fake-model\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vocab_size:            500\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("heads:                 6 (kv 6)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("eos:                   2 \"</s>\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max_request_bytes:     65536 (0.1 MiB)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chat_templates:        default (gguf), tool_use\n"), std::string::npos)
      << r.out;
  r = Run({"info", "--json"});
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["context_length"], 256);
  EXPECT_EQ(j["special_tokens"]["bos_id"], 1);
}

TEST_F(CliTest, HealthFollowsServingStatus) {
  CliResult r = Run({"health"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "SERVING\n");
  server_.SetServing(false);
  r = Run({"health"});
  EXPECT_EQ(r.code, kExitRpcError);
  EXPECT_EQ(r.out, "NOT_SERVING\n");
}

TEST(HealthCodecTest, EncodesAndDecodesTheWireFormat) {
  EXPECT_EQ(EncodeHealthCheckRequest(""), "");
  EXPECT_EQ(EncodeHealthCheckRequest("ab"), std::string("\x0a\x02"
                                                        "ab",
                                                        4));
  EXPECT_EQ(*DecodeHealthCheckResponse(""), 0);
  EXPECT_EQ(*DecodeHealthCheckResponse(std::string("\x08\x01", 2)), 1);
  // An unknown string field 2 before the status is skipped.
  EXPECT_EQ(*DecodeHealthCheckResponse(std::string("\x12\x01x\x08\x02", 5)), 2);
  EXPECT_FALSE(DecodeHealthCheckResponse(std::string("\x08", 1)).ok());
  EXPECT_EQ(ServingStatusName(3), "SERVICE_UNKNOWN");
}

TEST_F(CliTest, DeleteSession) {
  server_.service().AddSession("s1", 12);
  CliResult r = Run({"delete-session", "s1"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "freed_tokens: 12\n");
  r = Run({"delete-session", "s1"});
  EXPECT_EQ(r.code, kExitRpcError);
  EXPECT_NE(r.err.find("NOT_FOUND: no session s1"), std::string::npos) << r.err;
}

// Load balancers keep a session on one replica by the x-session-id metadata: every call on a
// session carries it, equal to the request's session_id; calls without a session do not.
TEST_F(CliTest, CallsOnASessionCarryItsIdAsRoutingMetadata) {
  EXPECT_EQ(Run({"generate", "--max-tokens", "1", "--session", "conv-7", "hi"}).code, kExitOk);
  EXPECT_EQ(Run({"generate", "--max-tokens", "1", "hi"}).code, kExitOk);
  EXPECT_EQ(Run({"delete-session", "conv-7"}).code, kExitOk);
  CliResult chat = Run({"chat", "--max-tokens", "1"}, "hi\n");
  EXPECT_EQ(chat.code, kExitOk) << chat.err;
  std::vector<textgen::v1::ChatRequest> chats = server_.service().chat_requests();
  ASSERT_EQ(chats.size(), 1u);
  const std::string chat_session = chats[0].session_id();
  EXPECT_EQ(server_.service().routing_keys(),
            (std::vector<std::string>{"conv-7", "-", "conv-7", chat_session, chat_session}));
}

// A draining replica answers UNAVAILABLE; the CLI's channel retries (retry_policy.h) and the
// user sees one clean answer.
TEST_F(CliTest, UnavailableIsRetriedUpToFiveAttempts) {
  server_.service().refused_calls = 2;
  CliResult r = Run({"generate", "--max-tokens", "2", "hi"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "tok0 tok1 ");
  EXPECT_EQ(server_.service().requests().size(), 3u);

  server_.service().refused_calls = 5;  // more than the policy's 5 attempts can absorb
  r = Run({"generate", "--max-tokens", "2", "hi"});
  EXPECT_EQ(r.code, kExitRpcError);
  EXPECT_NE(r.err.find("UNAVAILABLE: draining (fake)"), std::string::npos) << r.err;
  EXPECT_EQ(server_.service().requests().size(), 8u);
}

// gRPC 1.51 ends a call that arrives as the server shuts down with CANCELLED (grpc/grpc#41785):
// retried like UNAVAILABLE. Other errors are not retried.
TEST_F(CliTest, CancelledBeforeAnyResponseIsRetriedOtherErrorsAreNot) {
  server_.service().refusal = grpc::StatusCode::CANCELLED;
  server_.service().refused_calls = 1;
  CliResult r = Run({"generate", "--max-tokens", "1", "hi"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(server_.service().requests().size(), 2u);

  server_.service().refusal = grpc::StatusCode::RESOURCE_EXHAUSTED;
  server_.service().refused_calls = 1;
  r = Run({"generate", "--max-tokens", "1", "hi"});
  EXPECT_EQ(r.code, kExitRpcError);
  EXPECT_EQ(server_.service().requests().size(), 3u);
}

// "role: content" per message, as the fake server's stand-in template renders them.
std::string Transcript(const textgen::v1::ChatRequest& request) {
  std::string out;
  for (const textgen::v1::ChatMessage& m : request.messages()) {
    absl::StrAppend(&out, m.role(), ": ", m.content(), "|");
  }
  return out;
}

TEST_F(CliTest, ChatSendsTheWholeConversationOnOneSession) {
  CliResult r = Run({"chat", "--max-tokens", "2", "--system", "Be brief.", "--template-vars",
                     "{\"enable_thinking\": false}"},
                    "hi\nmore\n/reset\nagain\n");
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "tok0 tok1 \ntok0 tok1 \ntok0 tok1 \n");
  std::vector<textgen::v1::ChatRequest> requests = server_.service().chat_requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(Transcript(requests[0]), "system: Be brief.|user: hi|");
  EXPECT_EQ(Transcript(requests[1]),
            "system: Be brief.|user: hi|assistant: tok0 tok1 |user: more|");
  EXPECT_EQ(Transcript(requests[2]), "system: Be brief.|user: again|");
  EXPECT_EQ(requests[0].template_variables_json(), "{\"enable_thinking\": false}");
  EXPECT_EQ(requests[0].stopping().max_new_tokens(), 2u);
  EXPECT_FALSE(requests[0].session_id().empty());
  EXPECT_EQ(requests[0].session_id(), requests[1].session_id());
  EXPECT_NE(requests[1].session_id(), requests[2].session_id());
  // /reset deleted the first session and end of input the second.
  std::vector<std::string> deleted = server_.service().deleted();
  EXPECT_EQ(deleted,
            (std::vector<std::string>{requests[0].session_id(), requests[2].session_id()}));
}

TEST_F(CliTest, ChatShowPromptPrintsTheRenderedPromptOnStderr) {
  CliResult r = Run({"chat", "--max-tokens", "1", "--show-prompt"}, "hello\n");
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "tok0 \n");
  EXPECT_NE(r.err.find("[prompt]\nuser: hello\n\n[/prompt]\n"), std::string::npos) << r.err;
  ASSERT_EQ(server_.service().chat_requests().size(), 1u);
  EXPECT_TRUE(server_.service().chat_requests()[0].output().echo());
}

TEST_F(CliTest, ChatWithoutATemplateExplainsAndKeepsTheConversation) {
  CliResult r = Run({"chat", "--max-tokens", "1", "--template", "missing"}, "hello\n");
  EXPECT_EQ(r.code, kExitRpcError);
  EXPECT_NE(r.err.find("FAILED_PRECONDITION: the model has no chat template"), std::string::npos)
      << r.err;
}

TEST_F(CliTest, ChatRunsAScriptedToolLoop) {
  const std::string tools = test_support::TestTempPath("tools.json");
  const std::string results = test_support::TestTempPath("results.json");
  std::ofstream(tools) << R"([{"type":"function","function":{"name":"get_weather"}}])";
  std::ofstream(results) << R"({"get_weather": "sunny"})";
  CliResult r = Run({"chat", "--max-tokens", "2", "--tools", tools, "--tool-choice", "required",
                     "--tool-results", results},
                    "weather?\n");
  EXPECT_EQ(r.code, kExitOk) << r.err;
  // The call on stdout, the reasoning and the scripted result on stderr, then the reply.
  EXPECT_EQ(r.out, "[tool call get_weather] {\"city\": \"Oslo\"}\ntok0 tok1 \n");
  EXPECT_NE(r.err.find("[thinking]\nplan\n[/thinking]\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[tool result get_weather] sunny"), std::string::npos) << r.err;
  const std::vector<textgen::v1::ChatRequest> requests = server_.service().chat_requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].tool_choice().mode(), textgen::v1::ToolChoice::TOOL_CHOICE_REQUIRED);
  EXPECT_EQ(requests[1].tool_choice().mode(), textgen::v1::ToolChoice::TOOL_CHOICE_AUTO);
  ASSERT_EQ(requests[1].messages_size(), 3);
  const textgen::v1::ChatMessage& call = requests[1].messages(1);
  EXPECT_EQ(call.role(), "assistant");
  EXPECT_EQ(call.reasoning_content(), "plan");
  EXPECT_EQ(call.tool_calls_json(),
            R"([{"function":{"arguments":"{\"city\": \"Oslo\"}","name":"get_weather"},)"
            R"("id":"call_1","type":"function"}])");
  const textgen::v1::ChatMessage& result = requests[1].messages(2);
  EXPECT_EQ(result.role(), "tool");
  EXPECT_EQ(result.tool_call_id(), "call_1");
  EXPECT_EQ(result.content(), "sunny");
}

TEST_F(CliTest, ChatRefusesToolResultsThatAreNotAnObject) {
  const std::string results = test_support::TestTempPath("results-array.json");
  std::ofstream(results) << R"(["sunny"])";
  CliResult r = Run({"chat", "--tool-results", results}, "hi\n");
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--tool-results must be a JSON object"), std::string::npos) << r.err;
  EXPECT_TRUE(server_.service().chat_requests().empty());
}

TEST_F(CliTest, ChatExitCommandStops) {
  CliResult r = Run({"chat", "--max-tokens", "1"}, "one\n/exit\ntwo\n");
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(server_.service().chat_requests().size(), 1u);
}

TEST_F(CliTest, BenchCountsRequestsAndTokens) {
  server_.service().tokens_per_message = 2;  // 5 tokens -> messages of 2, 2, 1
  CliResult r = Run({"bench", "--concurrency", "3", "--requests", "7", "--prompt-tokens", "4",
                     "--max-tokens", "5", "--warmup", "2", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["requests"]["ok"], 7);
  EXPECT_EQ(j["requests"]["failed"], 0);
  EXPECT_EQ(j["requests"]["short"], 0);
  EXPECT_EQ(j["output_tokens"], 35);
  EXPECT_EQ(j["ttft_seconds"]["count"], 7);
  EXPECT_EQ(j["itl_seconds"]["count"], 14);  // 2 gaps per request (3 messages)
  EXPECT_EQ(j["e2e_seconds"]["count"], 7);
  EXPECT_NEAR(j["tokens_per_message"].get<double>(), 5.0 / 3.0, 1e-9);
  EXPECT_GT(j["ttft_seconds"]["p50"].get<double>(), 0);
  EXPECT_LE(j["ttft_seconds"]["p50"].get<double>(), j["ttft_seconds"]["p99"].get<double>());
  EXPECT_GT(j["output_tokens_per_second"].get<double>(), 0);

  std::vector<textgen::v1::GenerateRequest> requests = server_.service().requests();
  ASSERT_EQ(requests.size(), 9u);  // 2 warmup + 7 measured
  for (const textgen::v1::GenerateRequest& req : requests) {
    EXPECT_EQ(req.tokens().ids_size(), 4);
    EXPECT_TRUE(req.stopping().ignore_eos());
    EXPECT_EQ(req.stopping().max_new_tokens(), 5u);
    for (int32_t id : req.tokens().ids()) {
      EXPECT_TRUE(id >= 0 && id < 500 && id != 1 && id != 2) << id;  // in vocab, not BOS/EOS
    }
  }
}

TEST_F(CliTest, BenchSessionTurnsGrowThePromptOnOneSession) {
  CliResult r = Run({"bench", "--concurrency", "2", "--requests", "5", "--prompt-tokens", "3",
                     "--max-tokens", "2", "--session-turns", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("TTFT follow-up turns"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok 5, failed 0"), std::string::npos) << r.out;
  std::vector<textgen::v1::GenerateRequest> requests = server_.service().requests();
  ASSERT_EQ(requests.size(), 5u);  // conversations of 2, 2 and 1 turns
  std::map<std::string, std::vector<textgen::v1::GenerateRequest>> by_session;
  int sessionless = 0;
  for (const auto& req : requests) {
    if (req.session_id().empty()) {
      ++sessionless;
      EXPECT_EQ(req.tokens().ids_size(), 3);
    } else {
      by_session[req.session_id()].push_back(req);
    }
  }
  EXPECT_EQ(sessionless, 1);  // the one-turn remainder needs no session
  ASSERT_EQ(by_session.size(), 2u);
  for (const auto& [session, turns] : by_session) {
    ASSERT_EQ(turns.size(), 2u);
    const auto& first = turns[0].tokens().ids();
    const auto& second = turns[1].tokens().ids();
    ASSERT_EQ(first.size(), 3);
    ASSERT_EQ(second.size(), 3 + 2 + 3);  // previous prompt + previous output + 3 new
    for (int i = 0; i < 3; ++i) EXPECT_EQ(second[i], first[i]);
    EXPECT_EQ(second[3], 100);  // the fake's output ids
    EXPECT_EQ(second[4], 101);
  }
  EXPECT_EQ(server_.service().deleted().size(), 2u);  // sessions cleaned up
}

TEST_F(CliTest, BenchLongPromptsAndPoissonArrivalsRun) {
  // 4 requests of 20 tokens at 5 ms a token on 2 streams take at least 200 ms, so the
  // 10 ms injector must send long prompts inside the run.
  server_.service().token_delay = std::chrono::milliseconds(5);
  CliResult r = Run({"bench", "--concurrency", "2", "--requests", "4", "--prompt-tokens", "2",
                     "--max-tokens", "20", "--arrival-rate", "200", "--long-prompt-tokens", "50",
                     "--long-prompt-every", "10ms", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["requests"]["ok"], 4);
  EXPECT_EQ(j["output_tokens"], 80);  // long prompts are counted apart
  EXPECT_EQ(j["long_prompts"]["failed"], 0);
  bool saw_long = false;
  for (const auto& req : server_.service().requests()) {
    if (req.tokens().ids_size() == 50) {
      saw_long = true;
      EXPECT_EQ(req.stopping().max_new_tokens(), 1u);
    }
  }
  EXPECT_TRUE(saw_long);
  EXPECT_GT(j["long_prompts"]["ok"].get<int>(), 0);
}

TEST_F(CliTest, BenchRejectsOptionsTheModelCannotServe) {
  CliResult r = Run({"bench", "--prompt-tokens", "200", "--max-tokens", "100"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("over the model context of 256"), std::string::npos) << r.err;
  r = Run({"bench", "--max-tokens", "129"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("max_new_tokens_limit 128"), std::string::npos) << r.err;
}

TEST_F(CliTest, BenchReportsFailuresByCode) {
  // Each request fails with DEADLINE_EXCEEDED: the fake sleeps 50 ms per token.
  server_.service().token_delay = std::chrono::milliseconds(50);
  CliResult r =
      Run({"bench", "--requests", "2", "--max-tokens", "10", "--timeout", "60ms", "--json"});
  EXPECT_EQ(r.code, kExitRpcError);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["requests"]["failed"], 2);
  EXPECT_EQ(j["requests"]["by_code"]["DEADLINE_EXCEEDED"], 2);
}

}  // namespace
}  // namespace textgen::client
