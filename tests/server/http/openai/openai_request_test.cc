#include "server/http/openai/openai_request.h"

#include <optional>
#include <random>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/base/json_nesting.h"
#include "model/tokenizer/utf8.h"
#include "server/core/chat_validation.h"
#include "server/core/validation.h"
#include "server/http/openai/openai_field_names.h"
#include "tests/testing/byte_tokenizer.h"

namespace textgen::server::http {
namespace {

using ::testing::HasSubstr;

std::string Param(const absl::Status& status) {
  const auto param = status.GetPayload(kParamPayload);
  return param ? std::string(*param) : "";
}

TEST(OpenAiRequestTest, ChatFieldsMapOntoTheChatRequest) {
  absl::StatusOr<OpenAiRequest> parsed = ParseChatCompletionRequest(R"({
    "model": "m", "stream": true, "stream_options": {"include_usage": true},
    "messages": [
      {"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function"}]},
      {"role": "tool", "content": "42", "tool_call_id": "c1", "name": "calc"}],
    "max_completion_tokens": 7, "max_tokens": 99, "temperature": 0.5, "top_p": 0.9,
    "stop": "END", "seed": -1, "presence_penalty": 0.25, "frequency_penalty": -0.5,
    "logit_bias": {"12": -100, "7": 2.5}, "logprobs": true, "top_logprobs": 3, "n": 1,
    "user": "u1", "prompt_cache_key": "agent-7", "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1, "session_id": "s-1",
    "speculative": false,
    "tools": [{"type": "function", "function": {"name": "calc"}}], "tool_choice": "auto",
    "chat_template_kwargs": {"enable_thinking": false}, "unknown_field": [1, 2]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->kind, OpenAiRequest::Kind::kChat);
  EXPECT_EQ(parsed->model, "m");
  EXPECT_TRUE(parsed->stream);
  EXPECT_TRUE(parsed->include_usage);
  EXPECT_EQ(parsed->max_tokens_field, "max_completion_tokens");
  const v1::ChatRequest& chat = parsed->chat;
  ASSERT_EQ(chat.messages_size(), 4);
  EXPECT_EQ(chat.messages(0).role(), "system");
  EXPECT_EQ(chat.messages(1).content(), "a\nb");
  EXPECT_EQ(chat.messages(2).content(), "");
  EXPECT_EQ(chat.messages(2).tool_calls_json(), R"([{"id":"c1","type":"function"}])");
  EXPECT_EQ(chat.messages(3).tool_call_id(), "c1");
  EXPECT_EQ(chat.messages(3).name(), "calc");
  EXPECT_EQ(chat.stopping().max_new_tokens(), 7u);
  EXPECT_FLOAT_EQ(chat.sampling().temperature(), 0.5f);
  EXPECT_FLOAT_EQ(chat.sampling().top_p(), 0.9f);
  EXPECT_EQ(chat.stopping().stop_size(), 1);
  EXPECT_EQ(chat.sampling().seed(), ~uint64_t{0});
  EXPECT_FLOAT_EQ(chat.sampling().presence_penalty(), 0.25f);
  EXPECT_FLOAT_EQ(chat.sampling().frequency_penalty(), -0.5f);
  EXPECT_FLOAT_EQ(chat.sampling().logit_bias().at(12), -100.0f);
  EXPECT_FLOAT_EQ(chat.sampling().logit_bias().at(7), 2.5f);
  EXPECT_TRUE(chat.output().logprobs());
  EXPECT_EQ(chat.output().top_logprobs(), 3u);
  EXPECT_EQ(chat.sampling().top_k(), 40);
  EXPECT_FLOAT_EQ(chat.sampling().min_p(), 0.05f);
  EXPECT_FLOAT_EQ(chat.sampling().repetition_penalty(), 1.1f);
  EXPECT_EQ(chat.session_id(), "s-1");
  EXPECT_TRUE(chat.sampling().no_speculation());
  // The tools as sent, handed over parsed: the proto's text stays empty.
  EXPECT_EQ(chat.tools_json(), "");
  ASSERT_TRUE(parsed->tools.has_value());
  EXPECT_EQ(parsed->tools->array.dump(), R"([{"type":"function","function":{"name":"calc"}}])");
  EXPECT_EQ(parsed->tools->text_bytes, parsed->tools->array.dump().size());
  EXPECT_EQ(chat.template_variables_json(), R"({"enable_thinking":false})");
}

TEST(OpenAiRequestTest, SchemasKeepThePropertyOrderTheyWereSentIn) {
  // A constrained reply writes properties in the schema's order: "name" before "age".
  absl::StatusOr<OpenAiRequest> parsed = ParseChatCompletionRequest(R"({
    "messages": [{"role": "user", "content": "x"}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema":
      {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}}},
    "tools": [{"type": "function", "function": {"name": "f", "parameters":
      {"properties": {"zeta": {}, "alpha": {}}, "type": "object"}}}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(
      parsed->chat.constraint().json_schema(),
      R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}}})");
  ASSERT_TRUE(parsed->tools.has_value());
  EXPECT_EQ(parsed->tools->array.dump(),
            R"([{"type":"function","function":{"name":"f","parameters":)"
            R"({"properties":{"zeta":{},"alpha":{}},"type":"object"}}}])");
}

TEST(OpenAiRequestTest, ToolsParsedWithTheBodyWeighOnThePromptLimitAsTheirText) {
  // The same request with its tools handed over parsed (HTTP) and as text (gRPC): validation
  // counts the same bytes, and refuses before the template (which would raise) runs.
  absl::StatusOr<OpenAiRequest> parsed = ParseChatCompletionRequest(
      R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function",)"
      R"( "function": {"name": "calc", "description": "naïve \"quote\"\n"}}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->tools.has_value());
  v1::ChatRequest as_text = parsed->chat;
  as_text.set_tools_json(parsed->tools->array.dump());
  const size_t bytes = 4 + 2 + as_text.tools_json().size();  // "user", "hi", the tools
  testing::ByteTokenizer tokenizer;
  absl::StatusOr<ChatTemplates> templates =
      ChatTemplates::Load({{"", "{{ raise_exception('rendered') }}"}}, "", tokenizer);
  ASSERT_TRUE(templates.ok()) << templates.status();
  ValidationOptions options;
  for (const size_t limit : {bytes - 1, bytes}) {
    options.max_prompt_bytes = limit;
    absl::StatusOr<ValidatedRequest> from_http = ValidateChatRequest(
        parsed->chat, *templates, tokenizer, options, RequestContext{}, &*parsed->tools);
    absl::StatusOr<ValidatedRequest> from_grpc =
        ValidateChatRequest(as_text, *templates, tokenizer, options, RequestContext{});
    ASSERT_FALSE(from_http.ok());
    EXPECT_EQ(from_http.status(), from_grpc.status());
    EXPECT_THAT(std::string(from_http.status().message()),
                HasSubstr(limit < bytes ? absl::StrCat("hold ", bytes, " bytes; at most ", limit)
                                        : "rendered"));
  }
}

TEST(OpenAiRequestTest, ReasoningEffortSwitchesThinking) {
  const auto variables = [](const std::string& extra) {
    absl::StatusOr<OpenAiRequest> parsed = ParseChatCompletionRequest(
        R"({"messages": [{"role": "user", "content": "x"}])" + extra + "}");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return parsed->chat.template_variables_json();
  };
  EXPECT_EQ(variables(R"(, "reasoning_effort": "none")"), R"({"enable_thinking":false})");
  EXPECT_EQ(variables(R"(, "reasoning_effort": "high")"), R"({"enable_thinking":true})");
  EXPECT_EQ(variables(R"(, "reasoning_effort": "minimal",
                          "chat_template_kwargs": {"enable_thinking": true})"),
            R"({"enable_thinking":true})");
  EXPECT_EQ(variables(""), "");
  EXPECT_FALSE(ParseChatCompletionRequest(
                   R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "max"})")
                   .ok());
}

TEST(OpenAiRequestTest, ToolChoiceInEachForm) {
  const auto choice = [](const std::string& value) {
    absl::StatusOr<OpenAiRequest> parsed = ParseChatCompletionRequest(
        R"({"messages": [{"role": "user", "content": "x"}], "parallel_tool_calls": false,
            "tool_choice": )" +
        value + "}");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(parsed->chat.has_parallel_tool_calls());
    EXPECT_FALSE(parsed->chat.parallel_tool_calls());
    return parsed->chat.tool_choice();
  };
  EXPECT_EQ(choice(R"("auto")").mode(), v1::ToolChoice::TOOL_CHOICE_AUTO);
  EXPECT_EQ(choice(R"("none")").mode(), v1::ToolChoice::TOOL_CHOICE_NONE);
  EXPECT_EQ(choice(R"("required")").mode(), v1::ToolChoice::TOOL_CHOICE_REQUIRED);
  const v1::ToolChoice named = choice(R"({"type": "function", "function": {"name": "calc"}})");
  EXPECT_EQ(named.mode(), v1::ToolChoice::TOOL_CHOICE_FUNCTION);
  EXPECT_EQ(named.function_name(), "calc");
}

TEST(OpenAiRequestTest, CompletionPromptShapes) {
  absl::StatusOr<OpenAiRequest> text = ParseCompletionRequest(R"({"prompt": "hello"})");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->completion.text(), "hello");
  EXPECT_FALSE(text->completion.parse_special());  // control tokens in the prompt stay text

  absl::StatusOr<OpenAiRequest> list = ParseCompletionRequest(R"({"prompt": ["hello"]})");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->completion.text(), "hello");

  absl::StatusOr<OpenAiRequest> ids =
      ParseCompletionRequest(R"({"prompt": [1, 2, 3], "logprobs": 2, "echo": true})");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(ids->completion.tokens().ids(), ::testing::ElementsAre(1, 2, 3));
  EXPECT_TRUE(ids->completion.output().logprobs());
  EXPECT_EQ(ids->completion.output().top_logprobs(), 2u);
  EXPECT_TRUE(ids->completion.output().echo());

  absl::StatusOr<OpenAiRequest> nested = ParseCompletionRequest(R"({"prompt": [[5, 6]]})");
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_THAT(nested->completion.tokens().ids(), ::testing::ElementsAre(5, 6));
}

TEST(OpenAiRequestTest, ResponseFormatAndExtrasBecomeTheConstraint) {
  absl::StatusOr<OpenAiRequest> schema = ParseChatCompletionRequest(
      R"({"messages": [], "response_format": {"type": "json_schema", "json_schema":
          {"name": "x", "strict": true, "schema": {"type": "object"}}}})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->chat.constraint().json_schema(), R"({"type":"object"})");
  absl::StatusOr<OpenAiRequest> object =
      ParseChatCompletionRequest(R"({"messages": [], "response_format": {"type": "json_object"}})");
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_TRUE(object->chat.constraint().json_object());
  absl::StatusOr<OpenAiRequest> text =
      ParseChatCompletionRequest(R"({"messages": [], "response_format": {"type": "text"}})");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->chat.constraint().kind_case(), v1::OutputConstraint::KIND_NOT_SET);
  absl::StatusOr<OpenAiRequest> regex =
      ParseCompletionRequest(R"({"prompt": "x", "regex": "[0-9]+"})");
  ASSERT_TRUE(regex.ok()) << regex.status();
  EXPECT_EQ(regex->completion.constraint().regex(), "[0-9]+");
  absl::StatusOr<OpenAiRequest> grammar =
      ParseCompletionRequest(R"({"prompt": "x", "grammar": "root ::= \"a\""})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_EQ(grammar->completion.constraint().grammar(), "root ::= \"a\"");
}

struct BadBody {
  const char* body;
  const char* param;    // expected error.param ("" = none)
  const char* message;  // expected substring
};

class OpenAiRequestErrorTest : public ::testing::TestWithParam<BadBody> {};

TEST_P(OpenAiRequestErrorTest, NamesTheField) {
  const BadBody& bad = GetParam();
  absl::StatusOr<OpenAiRequest> parsed =
      absl::string_view(bad.body).find("prompt") != absl::string_view::npos
          ? ParseCompletionRequest(bad.body)
          : ParseChatCompletionRequest(bad.body);
  ASSERT_FALSE(parsed.ok()) << bad.body;
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(bad.message));
  EXPECT_EQ(Param(parsed.status()), bad.param);
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, OpenAiRequestErrorTest,
    ::testing::Values(
        BadBody{"", "", "the request body is empty"},
        BadBody{"{\"messages\": [", "", "not valid JSON"},
        BadBody{"[1]", "", "must be a JSON object, got an array"},
        BadBody{R"({"model": 3, "messages": []})", "model",
                "model must be a string, got an integer"},
        BadBody{R"({"messages": [], "speculative": "no"})", "speculative",
                "speculative must be a boolean, got a string"},
        BadBody{R"({})", "messages", "messages is missing"},
        BadBody{R"({"messages": {}})", "messages", "messages must be an array of messages"},
        BadBody{R"({"messages": [{"content": "x"}]})", "messages[0]",
                "messages[0].role is missing"},
        BadBody{R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content",
                "a string or an array of content parts"},
        BadBody{R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
                "messages[0].content[0]", "'image_url' is not supported"},
        BadBody{R"({"messages": [{"role": "user", "name": 1}]})", "messages[0].name",
                "messages[0].name must be a string"},
        BadBody{R"({"messages": [], "n": 17})", "n", "n must be in [1, 16], got 17"},
        BadBody{R"({"messages": [], "n": 0})", "n", "n must be in [1, 16], got 0"},
        BadBody{R"({"messages": [], "n": 2, "session_id": "s"})", "n",
                "n must be 1 with session_id, got 2"},
        BadBody{R"({"messages": [], "temperature": "hot"})", "temperature",
                "temperature must be a number, got a string"},
        BadBody{R"({"messages": [], "max_tokens": 0})", "max_tokens", "max_tokens must be >= 1"},
        BadBody{R"({"messages": [], "max_tokens": 1.5})", "max_tokens", "must be an integer"},
        BadBody{R"({"messages": [], "stop": [1]})", "stop[0]", "stop[0] must be a string"},
        BadBody{R"({"messages": [], "logit_bias": {"x": 1}})", "logit_bias",
                "logit_bias key 'x' is not a token id"},
        BadBody{R"({"messages": [], "seed": "1"})", "seed", "seed must be an integer"},
        BadBody{R"({"messages": [], "prompt_cache_key": 7})", "prompt_cache_key",
                "prompt_cache_key must be a string, got an integer"},
        BadBody{R"({"messages": [], "stream": "yes"})", "stream", "stream must be a boolean"},
        BadBody{R"({"messages": [], "tool_choice": "sometimes"})", "tool_choice",
                "tool_choice must be"},
        BadBody{R"({"messages": [], "tool_choice": {"type": "function"}})", "tool_choice",
                "tool_choice as an object must be"},
        BadBody{R"({"messages": [], "response_format": {"type": "xml"}})", "response_format",
                "response_format.type \"xml\" is not one of"},
        BadBody{R"({"messages": [], "response_format": {"type": "json_schema"}})",
                "response_format", "response_format.json_schema must be an object"},
        BadBody{R"({"messages": [], "response_format": {"type": "json_object"}, "regex": "a"})",
                "regex", "give one output constraint, not both response_format and regex"},
        BadBody{R"({"prompt": "x", "grammar": 7})", "grammar", "grammar must be a string"},
        BadBody{R"({"prompt": "x", "temperature": 1e999})", "",
                "the request body is not valid JSON: number overflow parsing '1e999'"},
        BadBody{R"({"prompt": ["a", "b"]})", "prompt", "prompt holds 2 prompts"},
        BadBody{R"({"prompt": []})", "prompt", "prompt is an empty array"},
        BadBody{R"({"prompt": [1, "a"]})", "prompt[1]", "prompt[1] must be a token id"},
        BadBody{R"({"prompt": "x", "n": 3, "best_of": 2})", "best_of",
                "best_of must be in [n, 16] (n = 3), got 2"},
        BadBody{R"({"prompt": "x", "best_of": 17})", "best_of", "best_of must be in [n, 16]"},
        BadBody{R"({"prompt": "x", "best_of": 3, "stream": true})", "best_of",
                "best_of greater than n cannot be streamed"},
        BadBody{R"({"prompt": "x", "suffix": "y"})", "suffix", "suffix is not supported"},
        BadBody{R"({"prompt": "x", "logprobs": true})", "logprobs",
                "logprobs must be an integer"}));

TEST(OpenAiRequestTest, BestOfGeneratesMoreCandidatesThanItReturns) {
  absl::StatusOr<OpenAiRequest> parsed =
      ParseCompletionRequest(R"({"prompt": "x", "n": 2, "best_of": 5})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->choices, 5);
  EXPECT_EQ(parsed->returned_choices, 2);
  parsed = ParseCompletionRequest(R"({"prompt": "x", "n": 2, "best_of": 2, "stream": true})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->choices, 2);
  EXPECT_EQ(parsed->returned_choices, 2);
}

// nlohmann quotes the bytes it stopped at; a body of arbitrary bytes must not put invalid
// UTF-8 into the message (found by the request fuzzer).
TEST(OpenAiRequestTest, AParseErrorMessageIsUtf8WhateverTheBody) {
  for (const char* body : {"\xff", "{\"a\": \xfe}", "\xc3"}) {
    absl::StatusOr<OpenAiRequest> parsed = ParseChatCompletionRequest(body);
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.status().message(), HasSubstr("not valid JSON"));
    EXPECT_TRUE(model::IsValidUtf8(
        std::string_view(parsed.status().message().data(), parsed.status().message().size())))
        << parsed.status();
  }
}

TEST(OpenAiRequestTest, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = "{\"messages\": " + std::string(100, '[') + std::string(100, ']') + "}";
  absl::StatusOr<OpenAiRequest> parsed = ParseChatCompletionRequest(deep);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("nests deeper than 64 levels"));
  EXPECT_EQ(model::JsonNestingDepth(R"({"a": "[[[[", "b": [{"c": "\"]]"}]})"), 3);
}

// The shared validation's errors name textgen's fields; OpenAI clients see their own names.
TEST(OpenAiRequestTest, ValidationErrorsUseOpenAiFieldNames) {
  testing::ByteTokenizer tokenizer;
  ValidationOptions options;
  options.max_new_tokens_limit = 32;
  options.context_length = 64;
  const auto validate = [&](absl::string_view body) {
    absl::StatusOr<OpenAiRequest> parsed = ParseCompletionRequest(body);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<ValidatedRequest> validated =
        ValidateGenerateRequest(parsed->completion, tokenizer, options, RequestContext{});
    EXPECT_FALSE(validated.ok()) << body;
    return ToOpenAiFieldNames(validated.status(), *parsed);
  };
  absl::Status status = validate(R"({"prompt": "hi", "temperature": -1})");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("temperature must be a finite number"));
  EXPECT_EQ(Param(status), "temperature");

  status = validate(R"({"prompt": "hi", "max_completion_tokens": 33})");
  EXPECT_EQ(status.message(), "max_completion_tokens must be in [1, 32] (server limit), got 33");
  EXPECT_EQ(Param(status), "max_completion_tokens");

  status = validate(R"({"prompt": "hi", "logprobs": 21})");
  EXPECT_THAT(std::string(status.message()), HasSubstr("logprobs must be in [0, 20]"));
  EXPECT_EQ(Param(status), "logprobs");

  status = validate(R"({"prompt": "hi", "stop": ["a", ""]})");
  EXPECT_EQ(status.message(), "stop[1] is empty");
  EXPECT_EQ(Param(status), "stop");

  status = validate(R"({"prompt": [999999]})");
  EXPECT_THAT(std::string(status.message()), HasSubstr("prompt[0] = 999999 is not a token id"));
  EXPECT_EQ(Param(status), "prompt");

  status = validate(R"({"prompt": "hi", "min_tokens": 20, "max_tokens": 10})");
  EXPECT_EQ(status.message(), "min_tokens (20) must not exceed the new tokens allowed (10)");
  EXPECT_EQ(Param(status), "min_tokens");

  // BOS + 40 bytes = 41 prompt tokens; 41 + 30 > the context of 64.
  status =
      validate(absl::StrCat(R"({"prompt": ")", std::string(40, 'a'), R"(", "max_tokens": 30})"));
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(),
            "max_tokens (30) + the prompt (41 tokens) = 71 exceeds the model's context length of "
            "64 tokens; ask for at most 23 new tokens");
  EXPECT_EQ(Param(status), "max_tokens");

  // A template's own message keeps its words, even ones that look like textgen's field names.
  OpenAiRequest chat;
  chat.kind = OpenAiRequest::Kind::kChat;
  status = ToOpenAiFieldNames(
      WithField(absl::InvalidArgumentError(
                    "the chat template refused the conversation: bad sampling.x and output."),
                "messages"),
      chat);
  EXPECT_EQ(status.message(),
            "the chat template refused the conversation: bad sampling.x and output.");
  EXPECT_EQ(Param(status), "messages");
}

// Property: whatever bytes arrive, the mapping answers OK or INVALID_ARGUMENT (never another
// code, never a crash or an exception), and an accepted body survives validation without
// crashing either. Mutations of valid bodies reach deep into the field handling.
TEST(OpenAiRequestPropertyTest, MutatedBodiesGetAnAnswer) {
  const std::vector<std::string> seeds = {
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true,)"
      R"("stream_options":{"include_usage":true},"logit_bias":{"3":1},"stop":["x"],"seed":7})",
      R"({"prompt":[1,2,3],"logprobs":2,"echo":true,"temperature":0.7,"top_p":0.5,"n":1})",
      R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"tools":[]})"};
  const std::string alphabet = "{}[]\":,0123456789.-eE truefalsnl\\u00ff\x80\xc3";
  std::mt19937_64 rng(20261123);
  testing::ByteTokenizer tokenizer;
  ValidationOptions options;
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string body = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits && !body.empty(); ++e) {
      const size_t at = rng() % body.size();
      switch (rng() % 3) {
        case 0:
          body[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          body.erase(at, 1 + rng() % 8);
          break;
        default:
          body.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
    }
    const bool chat = body.find("prompt") == std::string::npos;
    absl::StatusOr<OpenAiRequest> parsed =
        chat ? ParseChatCompletionRequest(body) : ParseCompletionRequest(body);
    if (!parsed.ok()) {
      ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << body;
      ASSERT_FALSE(parsed.status().message().empty()) << body;
      continue;
    }
    ++accepted;
    if (!chat) {
      absl::StatusOr<ValidatedRequest> validated =
          ValidateGenerateRequest(parsed->completion, tokenizer, options, RequestContext{});
      if (!validated.ok()) {
        // Every validation error names its field as data, and its message starts with it.
        const std::optional<std::string> field = ErrorField(validated.status());
        ASSERT_TRUE(field.has_value()) << validated.status();
        EXPECT_TRUE(absl::StartsWith(validated.status().message(), *field)) << validated.status();
        const absl::Status renamed = ToOpenAiFieldNames(validated.status(), *parsed);
        ASSERT_FALSE(renamed.message().empty());
        EXPECT_TRUE(renamed.GetPayload(kParamPayload).has_value()) << renamed;
      }
    }
  }
  // The mutations must leave a fair share valid, or the test would only exercise the parser.
  EXPECT_GT(accepted, 1000);
}

}  // namespace
}  // namespace textgen::server::http
