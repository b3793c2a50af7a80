#include "server/http/openai/responses_writer.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/byte_tokenizer.h"

namespace textgen::server::http {
namespace {

model::ChatOutputOptions HermesWithThinking() {
  model::ChatOutputOptions reply;
  reply.format = model::ToolCallFormat::kHermes;
  reply.parse_tool_calls = true;
  reply.tool_names = {"add"};
  reply.reasoning = model::ReasoningTags{"<think>", "</think>"};
  reply.id_seed = 11;
  return reply;
}

struct Outcome {
  std::vector<Json> events;  // streamed, in order
  Json streamed;             // the response of the last event
  Json body;                 // the same reply, not streamed
  std::vector<v1::ChatMessage> stored;
};

// Runs `pieces` (one token each; the last one finishes with `reason`) through a streaming
// writer and a collecting one.
Outcome RunReply(const std::vector<std::string>& pieces, FinishReason reason,
                 std::optional<model::ChatOutputOptions> reply, bool logprobs = false) {
  testing::ByteTokenizer tokenizer;
  Outcome out;
  const auto make = [&](std::vector<v1::ChatMessage>* stored) {
    ResponsesWriterOptions options;
    options.id = "resp_0123";
    options.created_at = 1700000000;
    options.model = "tiny";
    options.echo = {{"tools", Json::array()}, {"store", true}};
    options.logprobs = logprobs;
    options.reply = reply;
    options.on_done = [stored](const Json&, v1::ChatMessage m) { stored->push_back(m); };
    return ResponsesWriter(std::move(options), &tokenizer);
  };
  std::vector<v1::ChatMessage> ignored;
  ResponsesWriter streaming = make(&out.stored);
  ResponsesWriter collecting = make(&ignored);
  std::string sse = streaming.StreamStart();
  FinishedEvent finished;
  finished.reason = reason;
  finished.usage = {
      .prompt_tokens = 5, .cached_tokens = 0, .completion_tokens = static_cast<int>(pieces.size())};
  for (size_t i = 0; i < pieces.size(); ++i) {
    const int id = 'a' + 3;
    std::vector<model::SampleResult> samples;
    if (logprobs) samples.push_back({id, -0.5f, {}});
    if (i + 1 < pieces.size()) {
      TokenEvent token;
      token.text = pieces[i];
      token.token_ids = {id};
      token.logprobs = samples;
      sse += streaming.StreamDelta(token);
      collecting.Collect(token);
    } else {
      finished.text = pieces[i];
      finished.token_ids = {id};
      finished.logprobs = samples;
    }
  }
  sse += streaming.StreamEnd(finished);
  collecting.Collect(finished);
  sse += streaming.StreamTail(finished);
  out.body = Json::parse(collecting.Body({}, finished));
  size_t at = 0;
  while (at < sse.size()) {
    const size_t end = sse.find("\n\n", at);
    EXPECT_NE(end, std::string::npos);
    const std::string block = sse.substr(at, end - at);
    const size_t newline = block.find('\n');
    const std::string type = block.substr(7, newline - 7);  // "event: <type>"
    Json data = Json::parse(block.substr(newline + 7));     // "data: {...}"
    EXPECT_EQ(data["type"], type);
    out.events.push_back(std::move(data));
    at = end + 2;
  }
  out.streamed = out.events.back()["response"];
  return out;
}

std::vector<std::string> Types(const Outcome& outcome) {
  std::vector<std::string> types;
  for (const Json& event : outcome.events) types.push_back(event["type"]);
  return types;
}

TEST(ResponsesWriterTest, ReasoningTextAndACallAreThreeItemsStreamedInOrder) {
  const Outcome out =
      RunReply({"<think>", "plan ", "it", "</think>", "\n\n", "Sure.", "\n<tool_call>\n",
                R"({"name": "add", )", R"("arguments": {"a": 1}})", "\n</tool_call>"},
               FinishReason::kStopToken, HermesWithThinking());
  EXPECT_THAT(
      Types(out),
      ::testing::ElementsAre(
          "response.created", "response.in_progress", "response.output_item.added",
          "response.content_part.added", "response.reasoning_text.delta",
          "response.reasoning_text.delta", "response.reasoning_text.done",
          "response.content_part.done", "response.output_item.done", "response.output_item.added",
          "response.content_part.added", "response.output_text.delta", "response.output_text.done",
          "response.content_part.done", "response.output_item.done", "response.output_item.added",
          "response.function_call_arguments.delta", "response.function_call_arguments.done",
          "response.output_item.done", "response.completed"));
  for (size_t i = 0; i < out.events.size(); ++i) EXPECT_EQ(out.events[i]["sequence_number"], i);
  const Json& output = out.body["output"];
  ASSERT_EQ(output.size(), 3u) << out.body.dump(2);
  EXPECT_EQ(output[0]["type"], "reasoning");
  EXPECT_EQ(output[0]["content"][0]["text"], "plan it");
  EXPECT_EQ(output[1]["type"], "message");
  EXPECT_EQ(output[1]["content"][0]["type"], "output_text");
  EXPECT_EQ(output[1]["content"][0]["text"], "Sure.");
  EXPECT_EQ(output[2]["type"], "function_call");
  EXPECT_EQ(output[2]["name"], "add");
  EXPECT_EQ(Json::parse(output[2]["arguments"].get<std::string>()), Json({{"a", 1}}));
  EXPECT_THAT(output[2]["call_id"].get<std::string>(), ::testing::StartsWith("call_"));
  for (const Json& item : output) EXPECT_EQ(item["status"], "completed");
  EXPECT_EQ(out.body["status"], "completed");
  EXPECT_EQ(out.body["usage"]["output_tokens_details"]["reasoning_tokens"], 4);
  // The stream ends with exactly the object a non-streamed response returns.
  EXPECT_EQ(out.streamed, out.body);
  // What a continuation renders: the turn as one assistant message.
  ASSERT_EQ(out.stored.size(), 1u);
  EXPECT_EQ(out.stored[0].role(), "assistant");
  EXPECT_EQ(out.stored[0].content(), "Sure.");
  EXPECT_EQ(out.stored[0].reasoning_content(), "plan it");
  const Json calls = Json::parse(out.stored[0].tool_calls_json());
  EXPECT_EQ(calls[0]["id"], output[2]["call_id"]);
  EXPECT_EQ(calls[0]["function"]["name"], "add");
}

TEST(ResponsesWriterTest, WhitespaceBeforeACallIsNoMessage) {
  const Outcome out =
      RunReply({"\n", "<tool_call>", R"({"name": "add", "arguments": {}})", "</tool_call>"},
               FinishReason::kStopToken, HermesWithThinking());
  ASSERT_EQ(out.body["output"].size(), 1u) << out.body.dump(2);
  EXPECT_EQ(out.body["output"][0]["type"], "function_call");
  EXPECT_EQ(out.streamed, out.body);
}

TEST(ResponsesWriterTest, ALengthCutIsIncomplete) {
  const Outcome out = RunReply({"Once", " upon"}, FinishReason::kLength, std::nullopt);
  EXPECT_EQ(out.body["status"], "incomplete");
  EXPECT_EQ(out.body["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(out.body["output"][0]["status"], "incomplete");
  EXPECT_EQ(out.body["output"][0]["content"][0]["text"], "Once upon");
  EXPECT_EQ(out.events.back()["type"], "response.incomplete");
  EXPECT_EQ(out.streamed, out.body);
  EXPECT_EQ(out.body["usage"]["input_tokens"], 5);
  EXPECT_EQ(out.body["usage"]["output_tokens"], 2);
  EXPECT_EQ(out.body["usage"]["total_tokens"], 7);
}

TEST(ResponsesWriterTest, AnEmptyReplyIsAnEmptyMessage) {
  const Outcome out = RunReply({""}, FinishReason::kEos, std::nullopt);
  ASSERT_EQ(out.body["output"].size(), 1u);
  EXPECT_EQ(out.body["output"][0]["type"], "message");
  EXPECT_EQ(out.body["output"][0]["content"][0]["text"], "");
  EXPECT_EQ(out.streamed, out.body);
}

TEST(ResponsesWriterTest, LogprobsGoWithTheMessageText) {
  const Outcome out =
      RunReply({"a", "b", "c"}, FinishReason::kEos, std::nullopt, /*logprobs=*/true);
  const Json& logprobs = out.body["output"][0]["content"][0]["logprobs"];
  ASSERT_EQ(logprobs.size(), 3u) << out.body.dump(2);
  EXPECT_EQ(logprobs[0]["logprob"], -0.5);
  EXPECT_EQ(logprobs[0]["token"], "a");
  size_t streamed = 0;
  for (const Json& event : out.events) {
    if (event["type"] == "response.output_text.delta") streamed += event["logprobs"].size();
  }
  EXPECT_EQ(streamed, 3u);
  EXPECT_EQ(out.streamed, out.body);
}

TEST(ResponsesWriterTest, AnErrorEventCarriesAnErrorObject) {
  testing::ByteTokenizer tokenizer;
  ResponsesWriterOptions options;
  options.id = "resp_1";
  ResponsesWriter writer(std::move(options), &tokenizer);
  writer.StreamStart();
  ApiError error = ApiErrorForHttpStatus(503, "draining");
  const std::string sse = writer.StreamError(error);
  ASSERT_EQ(sse.rfind("event: error\ndata: ", 0), 0u) << sse;
  const Json data = Json::parse(sse.substr(sse.find("data: ") + 6));
  EXPECT_EQ(data["type"], "error");
  EXPECT_EQ(data["sequence_number"], 2);
  EXPECT_EQ(data["message"], "draining");
  EXPECT_EQ(data["error"]["type"], "server_error");
}

}  // namespace
}  // namespace textgen::server::http
