#include "server/http/openai/responses_request.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/validation.h"
#include "server/http/openai/openai_field_names.h"

namespace textgen::server::http {
namespace {

using ::testing::HasSubstr;

std::string Param(const absl::Status& status) {
  const auto param = status.GetPayload(kParamPayload);
  return param ? std::string(*param) : "";
}

TEST(ResponsesRequestTest, AStringInputIsOneUserMessage) {
  absl::StatusOr<ResponsesRequest> parsed =
      ParseResponsesRequest(R"({"model": "m", "input": "hello", "max_output_tokens": 9})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->request.kind, OpenAiRequest::Kind::kResponses);
  EXPECT_EQ(parsed->request.model, "m");
  const v1::ChatRequest& chat = parsed->request.chat;
  ASSERT_EQ(chat.messages_size(), 1);
  EXPECT_EQ(chat.messages(0).role(), "user");
  EXPECT_EQ(chat.messages(0).content(), "hello");
  EXPECT_EQ(chat.stopping().max_new_tokens(), 9u);
  EXPECT_TRUE(parsed->store);  // OpenAI's default
  EXPECT_EQ(parsed->echo["max_output_tokens"], 9);
  EXPECT_EQ(parsed->echo["tool_choice"], "auto");
  EXPECT_EQ(parsed->echo["text"]["format"]["type"], "text");
}

// The items an agent loop sends back: its earlier turn (reasoning, text, two calls), the
// calls' outputs, and the next user message.
TEST(ResponsesRequestTest, ItemsBecomeChatMessagesInOrder) {
  absl::StatusOr<ResponsesRequest> parsed = ParseResponsesRequest(R"({
    "instructions": "be brief",
    "input": [
      {"role": "developer", "content": "use tools"},
      {"type": "message", "role": "user",
       "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]},
      {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "short"}],
       "content": [{"type": "reasoning_text", "text": "long thought"}]},
      {"type": "message", "role": "assistant", "id": "msg_1",
       "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}]},
      {"type": "function_call", "call_id": "call_1", "name": "add", "arguments": "{\"a\":1}"},
      {"type": "function_call", "call_id": "call_2", "name": "get_weather",
       "arguments": "{\"city\":\"Oslo\"}"},
      {"type": "function_call_output", "call_id": "call_2", "output": "sunny"},
      {"type": "function_call_output", "call_id": "call_1",
       "output": [{"type": "input_text", "text": "2"}]},
      {"role": "user", "content": "thanks"}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->instructions, "be brief");
  const v1::ChatRequest& chat = parsed->request.chat;
  ASSERT_EQ(chat.messages_size(), 6);
  EXPECT_EQ(chat.messages(0).role(), "system");
  EXPECT_EQ(chat.messages(1).content(), "a\nb");
  const v1::ChatMessage& turn = chat.messages(2);
  EXPECT_EQ(turn.role(), "assistant");
  EXPECT_EQ(turn.content(), "Let me check.");
  EXPECT_EQ(turn.reasoning_content(), "long thought");  // the full text, not its summary
  const nlohmann::json calls = nlohmann::json::parse(turn.tool_calls_json());
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["id"], "call_1");
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["function"]["name"], "add");
  EXPECT_EQ(calls[0]["function"]["arguments"], "{\"a\":1}");
  EXPECT_EQ(calls[1]["function"]["name"], "get_weather");
  EXPECT_EQ(chat.messages(3).role(), "tool");
  EXPECT_EQ(chat.messages(3).tool_call_id(), "call_2");
  EXPECT_EQ(chat.messages(3).name(), "get_weather");
  EXPECT_EQ(chat.messages(3).content(), "sunny");
  EXPECT_EQ(chat.messages(4).name(), "add");
  EXPECT_EQ(chat.messages(4).content(), "2");
  EXPECT_EQ(chat.messages(5).content(), "thanks");

  // Instructions come first; the stored conversation leaves them out.
  const std::vector<v1::ChatMessage> conversation = AssembleConversation(*parsed, {});
  EXPECT_EQ(conversation.size(), 6u);
  ASSERT_EQ(parsed->request.chat.messages_size(), 7);
  EXPECT_EQ(parsed->request.chat.messages(0).content(), "be brief");
  EXPECT_EQ(parsed->request.chat.messages(1).content(), "use tools");
}

TEST(ResponsesRequestTest, CallsWithoutAMessageOpenAnAssistantTurn) {
  absl::StatusOr<ResponsesRequest> parsed = ParseResponsesRequest(R"({"input": [
      {"role": "user", "content": "hi"},
      {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
      {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c", "output": "ok"}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::ChatRequest& chat = parsed->request.chat;
  ASSERT_EQ(chat.messages_size(), 3);
  EXPECT_EQ(chat.messages(1).role(), "assistant");
  EXPECT_EQ(chat.messages(1).content(), "");
  EXPECT_EQ(chat.messages(1).reasoning_content(), "thinking");  // the summary when no text
  EXPECT_THAT(chat.messages(1).tool_calls_json(), HasSubstr("\"id\":\"c\""));
  EXPECT_EQ(chat.messages(2).role(), "tool");
}

TEST(ResponsesRequestTest, PreviousConversationGoesBetweenInstructionsAndInput) {
  absl::StatusOr<ResponsesRequest> parsed = ParseResponsesRequest(
      R"({"input": "second", "instructions": "sys", "previous_response_id": "resp_abc"})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->previous_response_id, "resp_abc");
  std::vector<v1::ChatMessage> previous(2);
  previous[0].set_role("user");
  previous[0].set_content("first");
  previous[1].set_role("assistant");
  previous[1].set_content("reply");
  const std::vector<v1::ChatMessage> conversation = AssembleConversation(*parsed, previous);
  ASSERT_EQ(conversation.size(), 3u);
  EXPECT_EQ(conversation[2].content(), "second");
  const v1::ChatRequest& chat = parsed->request.chat;
  ASSERT_EQ(chat.messages_size(), 4);
  EXPECT_EQ(chat.messages(0).content(), "sys");
  EXPECT_EQ(chat.messages(1).content(), "first");
  EXPECT_EQ(chat.messages(2).content(), "reply");
  EXPECT_EQ(chat.messages(3).content(), "second");
}

TEST(ResponsesRequestTest, ToolsTextFormatAndReasoningMapOntoChat) {
  absl::StatusOr<ResponsesRequest> parsed = ParseResponsesRequest(R"({
    "input": "x", "store": false, "seed": 7, "temperature": 0.5, "top_p": 0.75,
    "tools": [{"type": "function", "name": "add", "description": "adds", "strict": true,
               "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}],
    "tool_choice": {"type": "function", "name": "add"}, "parallel_tool_calls": false,
    "text": {"format": {"type": "json_schema", "name": "out", "strict": true,
                        "schema": {"type": "object", "properties": {"b": {"type": "string"}}}}},
    "reasoning": {"effort": "minimal"}, "metadata": {"k": "v"},
    "include": ["message.output_text.logprobs"], "top_logprobs": 2})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->store);
  const v1::ChatRequest& chat = parsed->request.chat;
  EXPECT_EQ(chat.sampling().seed(), 7u);
  EXPECT_FLOAT_EQ(chat.sampling().top_p(), 0.75f);
  EXPECT_EQ(chat.tools_json(), "");  // handed over parsed
  ASSERT_TRUE(parsed->request.tools.has_value());
  const nlohmann::ordered_json& tools = parsed->request.tools->array;
  EXPECT_EQ(parsed->request.tools->text_bytes, tools.dump().size());
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0]["type"], "function");
  EXPECT_EQ(tools[0]["function"]["name"], "add");
  EXPECT_EQ(tools[0]["function"]["description"], "adds");
  EXPECT_EQ(tools[0]["function"]["parameters"]["properties"]["a"]["type"], "integer");
  EXPECT_EQ(chat.tool_choice().mode(), v1::ToolChoice::TOOL_CHOICE_FUNCTION);
  EXPECT_EQ(chat.tool_choice().function_name(), "add");
  EXPECT_FALSE(chat.parallel_tool_calls());
  EXPECT_EQ(nlohmann::json::parse(chat.constraint().json_schema())["properties"]["b"]["type"],
            "string");
  EXPECT_EQ(nlohmann::json::parse(chat.template_variables_json())["enable_thinking"], false);
  EXPECT_TRUE(chat.output().logprobs());
  EXPECT_EQ(chat.output().top_logprobs(), 2u);
  // Echoed as sent.
  EXPECT_EQ(parsed->echo["tools"][0]["name"], "add");
  EXPECT_EQ(parsed->echo["text"]["format"]["name"], "out");
  EXPECT_EQ(parsed->echo["reasoning"]["effort"], "minimal");
  EXPECT_EQ(parsed->echo["metadata"]["k"], "v");
  EXPECT_EQ(parsed->echo["store"], false);
}

TEST(ResponsesRequestTest, JsonObjectFormatAndTextFormatTextAreAccepted) {
  absl::StatusOr<ResponsesRequest> json =
      ParseResponsesRequest(R"({"input": "x", "text": {"format": {"type": "json_object"}}})");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_TRUE(json->request.chat.constraint().json_object());
  absl::StatusOr<ResponsesRequest> text =
      ParseResponsesRequest(R"({"input": "x", "text": {"format": {"type": "text"}}})");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->request.chat.constraint().kind_case(), v1::OutputConstraint::KIND_NOT_SET);
}

// Each refusal names the parameter and says what to do instead.
TEST(ResponsesRequestTest, UnsupportedOrMalformedFieldsAreRefusedByName) {
  const struct {
    const char* body;
    const char* param;
    const char* says;
  } kCases[] = {
      {R"({})", "input", "input is missing"},
      {R"({"input": 5})", "input", "a string or an array of items"},
      {R"({"input": []})", "input", "no items"},
      {R"({"input": [{"role": "tool", "content": "x"}]})", "input[0]", "\"tool\""},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]})",
       "input[0].content[0]", "text-only"},
      {R"({"input": [{"type": "input_file"}]})", "input[0]", "\"input_file\""},
      {R"({"input": [{"role": "user", "content": [{"type": "refusal", "refusal": "no"}]}]})",
       "input[0].content[0]", "'refusal' is not supported"},
      {R"({"input": [{"type": "web_search_call", "id": "w"}]})", "input[0]", "hosted"},
      {R"({"input": [{"type": "item_reference", "id": "msg_1"}]})", "input[0]",
       "previous_response_id"},
      {R"({"input": [{"type": "function_call", "name": "f"}]})", "input[0]", "call_id"},
      {R"({"input": [{"type": "function_call_output", "call_id": "c"}]})", "input[0]", "output"},
      {R"({"input": "x", "tools": [{"type": "web_search_preview"}]})", "tools", "hosted"},
      {R"({"input": "x", "tools": [{"type": "function"}]})", "tools", "name is missing"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f", "parameters": 3}]})",
       "tools[0].parameters", "JSON Schema"},
      {R"({"input": "x", "tool_choice": "sometimes"})", "tool_choice", "\"required\""},
      {R"({"input": "x", "tool_choice": {"type": "web_search_preview"}})", "tool_choice",
       "web_search_preview"},
      {R"({"input": "x", "text": {"format": {"type": "yaml"}}})", "text.format", "\"yaml\""},
      {R"({"input": "x", "text": {"format": {"type": "json_schema"}}})", "text.format",
       "schema is missing"},
      {R"({"input": "x", "text": {"format": {"type": "json_object"}}, "regex": "a+"})",
       "text.format", "one output constraint"},
      {R"({"input": "x", "reasoning": {"effort": "max"}})", "reasoning.effort", "\"high\""},
      {R"({"input": "x", "background": true})", "background", "stream"},
      {R"({"input": "x", "truncation": "auto"})", "truncation", "disabled"},
      {R"({"input": "x", "include": ["file_search_call.results"]})", "include",
       "file_search_call.results"},
      {R"({"input": "x", "max_tokens": 5})", "max_tokens", "max_output_tokens"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens", ">= 1"},
      {R"({"input": "x", "n": 2})", "n", "previous_response_id"},
      {R"({"input": "x", "session_id": "s"})", "session_id", "previous_response_id"},
      {R"({"input": "x", "previous_response_id": "chatcmpl-1"})", "previous_response_id", "resp_"},
      {R"({"input": "x", "metadata": {"k": 1}})", "metadata", "strings"},
      {R"({"input": "x", "prompt": {"id": "pmpt_1"}})", "prompt", "not supported"},
  };
  for (const auto& c : kCases) {
    absl::StatusOr<ResponsesRequest> parsed = ParseResponsesRequest(c.body);
    ASSERT_FALSE(parsed.ok()) << c.body;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(Param(parsed.status()), c.param) << c.body << ": " << parsed.status();
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.says)) << c.body;
  }
}

// Errors of the shared validation come back in the Responses API's names.
TEST(ResponsesRequestTest, ValidationErrorsUseResponsesNames) {
  absl::StatusOr<ResponsesRequest> parsed = ParseResponsesRequest(R"({"input": "x"})");
  ASSERT_TRUE(parsed.ok());
  for (const auto& [field, param, message] :
       {std::tuple{"stopping.max_new_tokens", "max_output_tokens", "max_output_tokens is big"},
        std::tuple{"constraint.json_schema", "text.format", "text.format is bad"},
        std::tuple{"messages", "input", "input is bad"},
        std::tuple{"tool_choice.function.name", "tool_choice.name", "tool_choice.name is bad"}}) {
    const absl::string_view problem =
        absl::string_view(message).substr(absl::string_view(message).find(' ') + 1);
    const absl::Status status = InvalidField(field, problem);
    const absl::Status renamed = ToOpenAiFieldNames(status, parsed->request);
    EXPECT_EQ(Param(renamed), param) << field;
    EXPECT_EQ(renamed.message(), message) << field;
  }
}

}  // namespace
}  // namespace textgen::server::http
