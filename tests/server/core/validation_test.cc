#include "server/core/validation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/constraint/token_trie.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/utf8.h"
#include "server/core/chat_validation.h"
#include "server/core/embedding.h"
#include "tests/testing/byte_tokenizer.h"

namespace textgen::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ValidationTest : public ::testing::Test {
 protected:
  ValidationTest() {
    options_.default_max_new_tokens = 16;
    options_.max_new_tokens_limit = 32;
    options_.context_length = 64;
    options_.add_bos = true;
    context_.arrival_time = absl::FromUnixSeconds(1000);
    context_.deadline = absl::FromUnixSeconds(1010);
    context_.random = [] { return uint64_t{0xABCDEF}; };
    request_.set_text("hi");
  }

  absl::StatusOr<ValidatedRequest> Validate() {
    return ValidateGenerateRequest(request_, tokenizer_, options_, context_);
  }

  // Asserts the request fails with `code` and a message naming `field`.
  void ExpectError(absl::StatusCode code, const std::string& field) {
    absl::StatusOr<ValidatedRequest> result = Validate();
    ASSERT_FALSE(result.ok()) << "expected an error naming " << field;
    EXPECT_EQ(result.status().code(), code) << result.status();
    EXPECT_THAT(std::string(result.status().message()), HasSubstr(field));
    // The field is attached as data, and the message starts with it (front ends rename it).
    const std::optional<std::string> attached = ErrorField(result.status());
    ASSERT_TRUE(attached.has_value()) << result.status();
    EXPECT_TRUE(absl::StartsWith(result.status().message(), *attached)) << result.status();
  }

  testing::ByteTokenizer tokenizer_;
  ValidationOptions options_;
  RequestContext context_;
  v1::GenerateRequest request_;
};

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

TEST_F(ValidationTest, ResolvesDefaults) {
  absl::StatusOr<ValidatedRequest> r = Validate();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->prompt_tokens, ElementsAre(1, 'h' + 3, 'i' + 3));  // BOS + bytes
  EXPECT_EQ(r->prompt_text, "hi");
  EXPECT_EQ(r->request_id, "req-0000000000abcdef");
  EXPECT_EQ(r->sampling.temperature, 1.0f);
  EXPECT_EQ(r->sampling.top_p, 1.0f);
  EXPECT_EQ(r->sampling.repetition_penalty, 1.0f);
  EXPECT_EQ(r->sampling.seed, 0xABCDEFu);
  EXPECT_EQ(r->stopping.max_new_tokens, 16);
  EXPECT_EQ(r->arrival_time, absl::FromUnixSeconds(1000));
  EXPECT_EQ(r->deadline, absl::FromUnixSeconds(1010));
  EXPECT_TRUE(r->session_id.empty());
}

TEST_F(ValidationTest, CopiesEveryValidField) {
  request_.set_request_id("my-req");
  request_.set_session_id("chat:42_a.b-c");
  auto* s = request_.mutable_sampling();
  s->set_temperature(0);
  s->set_top_k(40);
  s->set_top_p(0.9f);
  s->set_min_p(0.05f);
  s->set_repetition_penalty(1.1f);
  s->set_presence_penalty(-2);
  s->set_frequency_penalty(2);
  s->set_seed(7);
  (*s->mutable_logit_bias())[20] = -100;
  (*s->mutable_logit_bias())[5] = 3.5f;
  auto* st = request_.mutable_stopping();
  st->set_max_new_tokens(32);
  st->set_min_new_tokens(2);
  st->add_stop("\n\n");
  st->add_stop_token_ids(2);
  st->set_ignore_eos(true);
  request_.mutable_output()->set_top_logprobs(20);
  request_.mutable_output()->set_echo(true);
  absl::StatusOr<ValidatedRequest> r = Validate();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->request_id, "my-req");
  EXPECT_EQ(r->session_id, "chat:42_a.b-c");
  EXPECT_EQ(r->sampling.temperature, 0.0f);
  EXPECT_EQ(r->sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r->sampling.top_p, 0.9f);
  EXPECT_FLOAT_EQ(r->sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(r->sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(r->sampling.presence_penalty, -2.0f);
  EXPECT_EQ(r->sampling.frequency_penalty, 2.0f);
  EXPECT_EQ(r->sampling.seed, 7u);
  EXPECT_THAT(r->sampling.logit_bias,
              ElementsAre(std::pair<int, float>{5, 3.5f}, std::pair<int, float>{20, -100.0f}));
  EXPECT_EQ(r->sampling.top_logprobs, 20);
  EXPECT_EQ(r->stopping.max_new_tokens, 32);
  EXPECT_EQ(r->stopping.min_new_tokens, 2);
  EXPECT_THAT(r->stopping.stop_strings, ElementsAre("\n\n"));
  EXPECT_THAT(r->stopping.stop_token_ids, ElementsAre(2));
  EXPECT_TRUE(r->stopping.ignore_eos);
  EXPECT_TRUE(r->output.logprobs);  // implied by top_logprobs
  EXPECT_EQ(r->output.top_logprobs, 20);
  EXPECT_TRUE(r->output.echo);
}

TEST_F(ValidationTest, TokenPromptIsUsedAsIsWithoutBos) {
  request_.mutable_tokens()->add_ids(100);
  request_.mutable_tokens()->add_ids(258);
  absl::StatusOr<ValidatedRequest> r = Validate();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->prompt_tokens, ElementsAre(100, 258));
  EXPECT_TRUE(r->prompt_text.empty());
}

TEST_F(ValidationTest, NoBosWhenTheVocabularyDoesNotAddIt) {
  options_.add_bos = false;
  absl::StatusOr<ValidatedRequest> r = Validate();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->prompt_tokens, ElementsAre('h' + 3, 'i' + 3));
}

TEST_F(ValidationTest, PromptErrors) {
  request_.clear_prompt();
  ExpectError(kInvalid, "prompt");
  request_.set_text("");
  ExpectError(kInvalid, "text is empty");
  request_.set_text(std::string("ab\xC3(", 4));
  ExpectError(kInvalid, "text is not valid UTF-8");
  request_.set_text(std::string("\xED\xA0\x80", 3));  // a UTF-16 surrogate
  ExpectError(kInvalid, "text is not valid UTF-8");
  request_.mutable_tokens();
  ExpectError(kInvalid, "tokens.ids is empty");
  request_.mutable_tokens()->add_ids(5);
  request_.mutable_tokens()->add_ids(259);
  ExpectError(kInvalid, "tokens.ids[1] = 259");
  request_.mutable_tokens()->set_ids(1, -1);
  ExpectError(kInvalid, "tokens.ids[1] = -1");
}

TEST_F(ValidationTest, ConstraintsCompileOrAreRefusedByField) {
  request_.mutable_constraint()->set_regex("[0-9]+");
  ExpectError(absl::StatusCode::kUnimplemented, "constraint.regex");  // no compiler given
  model::ConstraintCompiler compiler({});
  options_.constraints = &compiler;
  options_.token_trie = model::TokenTrie::Build(tokenizer_);
  absl::StatusOr<ValidatedRequest> ok = Validate();
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_NE(ok->constraint.grammar, nullptr);
  EXPECT_EQ(ok->constraint.token_trie, options_.token_trie);
  EXPECT_FALSE(ok->constraint.cache_hit);
  EXPECT_TRUE(Validate()->constraint.cache_hit);
  request_.mutable_constraint()->set_regex(std::string("a\xC3", 3));
  ExpectError(kInvalid, "constraint.regex is not valid UTF-8");
  request_.mutable_constraint()->set_grammar("root ::= \"\xC3\xA9");  // cut inside a literal
  ExpectError(kInvalid, "constraint.grammar is refused: grammar line 1: unterminated literal");
  request_.mutable_constraint()->set_json_schema("{\"type\": \"tuple\"}");
  ExpectError(kInvalid, "constraint.json_schema is refused: schema /type: unknown type");
  // A parser's message quoting part of a character stays valid UTF-8.
  request_.mutable_constraint()->set_json_schema("0\xC3\xA9");
  absl::StatusOr<ValidatedRequest> quoted = Validate();
  ASSERT_FALSE(quoted.ok());
  EXPECT_TRUE(model::IsValidUtf8(std::string(quoted.status().message()))) << quoted.status();
}

// The prompt size limit applies before tokenizing (Generate) or rendering (Chat).
TEST_F(ValidationTest, PromptBytesAreLimitedBeforeTokenizing) {
  options_.max_prompt_bytes = 8;
  request_.set_text("123456789");
  absl::StatusOr<ValidatedRequest> result = Validate();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), kInvalid);
  EXPECT_EQ(result.status().message(),
            "text is 9 bytes; at most 8 are accepted (server flag --max-prompt-bytes)");
  request_.set_text("12345678");
  options_.context_length = 64;
  EXPECT_TRUE(Validate().ok());
}

TEST_F(ValidationTest, TemperatureErrors) {
  for (float bad : {-1.0f, std::nanf(""), std::numeric_limits<float>::infinity(), 100.5f}) {
    request_.mutable_sampling()->set_temperature(bad);
    ExpectError(kInvalid, "sampling.temperature");
  }
  request_.mutable_sampling()->set_temperature(-1);
  EXPECT_THAT(std::string(Validate().status().message()), HasSubstr("got -1"));
}

TEST_F(ValidationTest, SamplingRangeErrors) {
  request_.mutable_sampling()->set_top_k(-1);
  ExpectError(kInvalid, "sampling.top_k");
  request_.mutable_sampling()->set_top_k(0);

  for (float bad : {0.0f, -0.1f, 1.01f, std::nanf("")}) {
    request_.mutable_sampling()->set_top_p(bad);
    ExpectError(kInvalid, "sampling.top_p must be in (0, 1]");
  }
  request_.mutable_sampling()->set_top_p(1);

  for (float bad : {-0.01f, 1.5f, std::nanf("")}) {
    request_.mutable_sampling()->set_min_p(bad);
    ExpectError(kInvalid, "sampling.min_p must be in [0, 1]");
  }
  request_.mutable_sampling()->set_min_p(0);

  for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity()}) {
    request_.mutable_sampling()->set_repetition_penalty(bad);
    ExpectError(kInvalid, "sampling.repetition_penalty");
  }
  request_.mutable_sampling()->set_repetition_penalty(1);

  request_.mutable_sampling()->set_presence_penalty(2.5f);
  ExpectError(kInvalid, "sampling.presence_penalty must be in [-2, 2], got 2.5");
  request_.mutable_sampling()->set_presence_penalty(0);
  request_.mutable_sampling()->set_frequency_penalty(-3);
  ExpectError(kInvalid, "sampling.frequency_penalty must be in [-2, 2], got -3");
}

TEST_F(ValidationTest, LogitBiasErrors) {
  (*request_.mutable_sampling()->mutable_logit_bias())[259] = 1;
  ExpectError(kInvalid, "sampling.logit_bias has token id 259");
  request_.mutable_sampling()->mutable_logit_bias()->clear();
  (*request_.mutable_sampling()->mutable_logit_bias())[10] = 100.5f;
  ExpectError(kInvalid, "sampling.logit_bias[10] must be in [-100, 100]");
  (*request_.mutable_sampling()->mutable_logit_bias())[10] = std::nanf("");
  ExpectError(kInvalid, "sampling.logit_bias[10]");
}

TEST_F(ValidationTest, StoppingErrors) {
  auto* st = request_.mutable_stopping();
  st->set_max_new_tokens(33);
  ExpectError(kInvalid, "stopping.max_new_tokens must be in [1, 32]");
  st->set_max_new_tokens(8);
  st->set_min_new_tokens(9);
  ExpectError(kInvalid, "stopping.min_new_tokens (9) must not exceed the new tokens allowed (8)");
  st->set_min_new_tokens(0);

  for (int i = 0; i < 17; ++i) st->add_stop("x");
  ExpectError(kInvalid, "stopping.stop has 17 strings; at most 16");
  st->clear_stop();
  st->add_stop(std::string(257, 'a'));
  ExpectError(kInvalid, "stopping.stop[0] is 257 bytes; at most 256");
  st->set_stop(0, "");
  ExpectError(kInvalid, "stopping.stop[0] is empty");
  st->set_stop(0, std::string("\xFF", 1));
  ExpectError(kInvalid, "stopping.stop[0] is not valid UTF-8");
  st->clear_stop();

  for (int i = 0; i < 65; ++i) st->add_stop_token_ids(2);
  ExpectError(kInvalid, "stopping.stop_token_ids has 65 ids");
  st->clear_stop_token_ids();
  st->add_stop_token_ids(300);
  ExpectError(kInvalid, "stopping.stop_token_ids[0] = 300");
}

TEST_F(ValidationTest, OutputErrors) {
  request_.mutable_output()->set_top_logprobs(21);
  ExpectError(kInvalid, "output.top_logprobs must be in [0, 20], got 21");
}

TEST_F(ValidationTest, IdErrors) {
  request_.set_session_id(std::string(129, 'a'));
  ExpectError(kInvalid, "session_id must be 1..128 characters, got 129 (--max-session-id-bytes)");
  request_.set_session_id("has space");
  ExpectError(kInvalid, "session_id has character 0x20 at offset 3");
  request_.set_session_id("ok");
  request_.set_request_id(std::string(129, 'r'));
  ExpectError(kInvalid, "request_id is 129 characters");
  request_.set_request_id("line\nbreak");
  ExpectError(kInvalid, "request_id has byte 0x0A");
}

// Every size limit follows its flag (small values here), names the flag, and refuses before the
// prompt is tokenized.
TEST_F(ValidationTest, SizeLimitsFollowTheirFlagsAndComeBeforeTokenizing) {
  options_.max_stop_strings = 2;
  options_.max_stop_string_bytes = 4;
  options_.max_stop_token_ids = 3;
  options_.max_logit_bias_entries = 2;
  options_.max_session_id_bytes = 8;
  const auto expect_refused = [&](const std::string& message) {
    const int calls = tokenizer_.encode_calls;
    absl::StatusOr<ValidatedRequest> result = Validate();
    ASSERT_FALSE(result.ok()) << message;
    EXPECT_EQ(result.status().code(), kInvalid);
    EXPECT_EQ(result.status().message(), message);
    EXPECT_EQ(tokenizer_.encode_calls, calls) << "tokenized before refusing: " << message;
  };
  v1::StoppingCriteria* st = request_.mutable_stopping();
  for (const char* stop : {"a", "b", "c"}) st->add_stop(stop);
  expect_refused("stopping.stop has 3 strings; at most 2 are allowed (--max-stop-strings)");
  st->clear_stop();
  st->add_stop("12345");
  expect_refused("stopping.stop[0] is 5 bytes; at most 4 are allowed (--max-stop-string-bytes)");
  st->clear_stop();
  for (int id : {5, 6, 7, 8}) st->add_stop_token_ids(id);
  expect_refused("stopping.stop_token_ids has 4 ids; at most 3 are allowed (--max-stop-token-ids)");
  st->clear_stop_token_ids();
  for (int id : {5, 6, 7}) (*request_.mutable_sampling()->mutable_logit_bias())[id] = 1;
  expect_refused(
      "sampling.logit_bias has 3 entries; at most 2 are allowed (--max-logit-bias-entries)");
  request_.mutable_sampling()->mutable_logit_bias()->erase(7);
  request_.set_session_id("123456789");
  expect_refused("session_id must be 1..8 characters, got 9 (--max-session-id-bytes)");
  request_.set_session_id("12345678");
  st->add_stop("1234");
  for (int id : {5, 6, 7}) st->add_stop_token_ids(id);
  EXPECT_TRUE(Validate().ok()) << "at every limit exactly";
}

TEST_F(ValidationTest, ContextLengthIsOutOfRange) {
  // Prompt "hi" = 3 tokens; 3 + 62 > 64 but 62 is also over the limit of 32, so widen it.
  options_.max_new_tokens_limit = 100;
  request_.mutable_stopping()->set_max_new_tokens(62);
  absl::StatusOr<ValidatedRequest> r = Validate();
  ASSERT_EQ(r.status().code(), absl::StatusCode::kOutOfRange) << r.status();
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("stopping.max_new_tokens (62) + the prompt (3 tokens) = 65 exceeds the "
                        "model's context length of 64 tokens"));
  EXPECT_EQ(ErrorField(r.status()), "stopping.max_new_tokens");
  request_.mutable_stopping()->set_max_new_tokens(61);
  EXPECT_TRUE(Validate().ok());
}

TEST_F(ValidationTest, DefaultLengthShrinksToFitTheContext) {
  request_.set_text(std::string(60, 'a'));  // 61 tokens with BOS, 3 left
  absl::StatusOr<ValidatedRequest> r = Validate();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stopping.max_new_tokens, 3);
  request_.set_text(std::string(63, 'a'));  // 64 tokens: no room at all
  ExpectError(absl::StatusCode::kOutOfRange, "context length of 64");
}

TEST_F(ValidationTest, SessionIdHelper) {
  EXPECT_TRUE(ValidateSessionId("A-z_0.9:x", "session_id").ok());
  EXPECT_EQ(ValidateSessionId("", "session_id").code(), kInvalid);
}

TEST_F(ValidationTest, ChatMessagesAreCheckedBeforeRendering) {
  absl::StatusOr<ChatTemplates> templates = ChatTemplates::Load(
      {{"", "{% for m in messages %}{{ m.content }}{% endfor %}"}}, "", tokenizer_);
  ASSERT_TRUE(templates.ok()) << templates.status();
  v1::ChatRequest chat;
  v1::ChatMessage* message = chat.add_messages();
  message->set_role("user");
  message->set_content("bad \xc3\x28 byte");
  absl::StatusOr<ValidatedRequest> result =
      ValidateChatRequest(chat, *templates, tokenizer_, options_, context_);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), kInvalid);
  EXPECT_THAT(
      std::string(result.status().message()),
      HasSubstr("messages[0].content is not valid UTF-8 (invalid byte 0xC3 at byte offset 4)"));

  message->set_content("fine");
  message->set_role(std::string(65, 'r'));
  result = ValidateChatRequest(chat, *templates, tokenizer_, options_, context_);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("messages[0].role is 65 bytes; at most 64"));

  message->set_role("user");
  result = ValidateChatRequest(chat, *templates, tokenizer_, options_, context_);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->prompt_text, "fine");
  EXPECT_EQ(result->prompt_tokens.size(), 4u);  // no BOS added to a chat prompt
}

TEST_F(ValidationTest, ChatPromptBytesAreLimitedBeforeToolsAndRendering) {
  // A template that would fail if it ran: the limit must refuse the request first.
  absl::StatusOr<ChatTemplates> templates =
      ChatTemplates::Load({{"", "{{ raise_exception('rendered') }}"}}, "", tokenizer_);
  ASSERT_TRUE(templates.ok()) << templates.status();
  v1::ChatRequest chat;
  v1::ChatMessage* message = chat.add_messages();
  message->set_role("user");
  message->set_content("0123456789");
  chat.set_tools_json("[]");
  options_.max_prompt_bytes = 15;
  absl::StatusOr<ValidatedRequest> result =
      ValidateChatRequest(chat, *templates, tokenizer_, options_, context_);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), kInvalid);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("messages, tools and template variables hold 16 bytes; at most 15"));
  options_.max_prompt_bytes = 16;
  result = ValidateChatRequest(chat, *templates, tokenizer_, options_, context_);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("rendered"));

  // Before the tools are read and their schemas compiled, too.
  chat.set_tools_json(R"([{"type":"retrieval"}])");  // 22 bytes, refused by the tool plan
  options_.max_prompt_bytes = 35;
  result = ValidateChatRequest(chat, *templates, tokenizer_, options_, context_);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("messages, tools and template variables hold 36 bytes; at most 35"));
  options_.max_prompt_bytes = 36;
  result = ValidateChatRequest(chat, *templates, tokenizer_, options_, context_);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("function tools only"));
}

}  // namespace
}  // namespace textgen::server

namespace textgen::server {
namespace {

// An encoder cannot generate: refused before anything else, naming the route that serves it;
// its embedding inputs are bounded by one step (bidirectional attention: one chunk).
TEST_F(ValidationTest, AnEncoderRefusesGenerationAndBoundsEmbeddingInputsByAStep) {
  options_.generates = false;
  options_.model_name = "bge-small";
  request_.set_request_id("not an id\n");  // would be INVALID_ARGUMENT; generation comes first
  absl::StatusOr<ValidatedRequest> r = Validate();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"bge-small\" is an embedding model"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("/v1/embeddings"));

  options_.max_embedding_tokens = 8;
  v1::EmbedRequest embed;
  embed.add_inputs()->set_text("short");
  embed.add_inputs()->set_text("a text of more than eight bytes");
  absl::StatusOr<std::vector<ValidatedRequest>> inputs =
      ValidateEmbedRequest(embed, tokenizer_, options_, context_);
  ASSERT_FALSE(inputs.ok());
  EXPECT_EQ(inputs.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(inputs.status().message()), HasSubstr("inputs[1]"));
  EXPECT_THAT(std::string(inputs.status().message()), HasSubstr("--max-batch-tokens"));
  embed.mutable_inputs(1)->set_text("ok");
  EXPECT_TRUE(ValidateEmbedRequest(embed, tokenizer_, options_, context_).ok());
}

}  // namespace
}  // namespace textgen::server

namespace textgen::server {
namespace {

// Mistral's template: tool_choice auto waits for [TOOL_CALLS], which the vocabulary holds as one
// control token (no text to watch): the constraint is armed by that token's id.
// A byte-fallback vocabulary: <unk> <s> </s>, then `control` (ids 3, 4, ...), then the bytes.
absl::StatusOr<std::unique_ptr<model::Tokenizer>> ByteTokenizerWithControlTokens(
    const std::vector<std::string>& control) {
  model::TokenizerData data;
  data.tokens = {"<unk>", "<s>", "</s>"};
  data.token_types = {model::TokenizerData::kUnknown, model::TokenizerData::kControl,
                      model::TokenizerData::kControl};
  for (const std::string& token : control) {
    data.tokens.push_back(token);
    data.token_types.push_back(model::TokenizerData::kControl);
  }
  for (int b = 0; b < 256; ++b) {
    data.tokens.push_back(absl::StrFormat("<0x%02X>", b));
    data.token_types.push_back(model::TokenizerData::kByte);
  }
  data.scores.assign(data.tokens.size(), 0.0f);
  data.unk_id = 0, data.bos_id = 1, data.eos_id = 2;
  return model::CreateTokenizer(data);
}

TEST(ChatToolTriggerTest, AControlTokenTagArmsTheLazyConstraintByItsId) {
  absl::StatusOr<std::unique_ptr<model::Tokenizer>> tokenizer =
      ByteTokenizerWithControlTokens({"[TOOL_CALLS]"});
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  absl::StatusOr<ChatTemplates> templates = ChatTemplates::Load(
      {{"", "{% for m in messages %}{{ m.content }}{% endfor %}{# [TOOL_CALLS] #}"}}, "",
      **tokenizer);
  ASSERT_TRUE(templates.ok()) << templates.status();
  model::ConstraintCompiler compiler({});
  ValidationOptions options;
  options.constraints = &compiler;
  options.token_trie = model::TokenTrie::Build(**tokenizer);
  v1::ChatRequest chat;
  v1::ChatMessage* message = chat.add_messages();
  message->set_role("user");
  message->set_content("add 1 and 2");
  chat.set_tools_json(
      R"([{"type":"function","function":{"name":"add","parameters":{"type":"object",)"
      R"("properties":{"a":{"type":"integer"}},"required":["a"]}}}])");
  chat.mutable_tool_choice()->set_mode(v1::ToolChoice::TOOL_CHOICE_AUTO);
  absl::StatusOr<ValidatedRequest> r =
      ValidateChatRequest(chat, *templates, **tokenizer, options, RequestContext{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->constraint.grammar, nullptr);
  EXPECT_EQ(r->constraint.trigger, "[TOOL_CALLS]");
  EXPECT_EQ(r->constraint.trigger_token, 3);
  ASSERT_TRUE(r->reply.has_value());
  EXPECT_EQ(r->reply->format, model::ToolCallFormat::kMistral);
}

// Phi-4-mini's template shape reads tools only from a system message's `tools` text and never
// renders calls: a Chat request's tools reach the prompt there, and an earlier call is written
// after its message's content as the model writes calls (its tags as control tokens).
TEST(ChatToolTriggerTest, ATemplateWithToolsInItsSystemMessageSeesToolsAndEarlierCalls) {
  absl::StatusOr<std::unique_ptr<model::Tokenizer>> tokenizer =
      ByteTokenizerWithControlTokens({"<|tool_call|>", "<|/tool_call|>"});
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  absl::StatusOr<ChatTemplates> templates = ChatTemplates::Load(
      {{"",
        "{% for message in messages %}{{ '<' + message['role'] + '>' + message['content'] }}"
        "{% if 'tools' in message %}{{ '<tooldefs>' + message['tools'] + '<|/tool|>' }}{% endif %}"
        "{% endfor %}"}},
      "", **tokenizer);
  ASSERT_TRUE(templates.ok()) << templates.status();
  ValidationOptions options;
  v1::ChatRequest chat;
  for (const auto& [role, content] :
       {std::pair{"user", "add 1 and 2"}, std::pair{"assistant", ""}, std::pair{"tool", "3"}}) {
    v1::ChatMessage* message = chat.add_messages();
    message->set_role(role);
    message->set_content(content);
  }
  chat.mutable_messages(1)->set_tool_calls_json(
      R"([{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}}])");
  chat.mutable_messages(2)->set_tool_call_id("c1");
  chat.set_tools_json(R"([{"type":"function","function":{"name":"add","parameters":{}}}])");
  absl::StatusOr<ValidatedRequest> r =
      ValidateChatRequest(chat, *templates, **tokenizer, options, RequestContext{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->prompt_text, std::string("<system>") + model::kToolsSystemPrompt +
                                R"(<tooldefs>[{"name": "add", "parameters": {}}]<|/tool|>)"
                                R"(<user>add 1 and 2<assistant><|tool_call|>[{"name": "add", )"
                                R"("arguments": {"a": 1}}]<|/tool_call|><tool>3)");
  // The tags the model writes as control tokens are those tokens; the rest is text.
  EXPECT_EQ(std::count(r->prompt_tokens.begin(), r->prompt_tokens.end(), 3), 1);
  EXPECT_EQ(std::count(r->prompt_tokens.begin(), r->prompt_tokens.end(), 4), 1);
  ASSERT_TRUE(r->reply.has_value());
  EXPECT_EQ(r->reply->format, model::ToolCallFormat::kPhi4Mini);
}

TEST(SessionRoutingTest, NoHeaderIsAccepted) {
  EXPECT_TRUE(CheckSessionRoutingHeader({}, "conv-1").ok());
  EXPECT_TRUE(CheckSessionRoutingHeader({}, "").ok());
}

TEST(SessionRoutingTest, HeaderEqualToSessionIdIsAccepted) {
  EXPECT_TRUE(CheckSessionRoutingHeader({"conv-1"}, "conv-1").ok());
}

TEST(SessionRoutingTest, DifferentHeaderIsInvalidAndEchoesNeitherValue) {
  const absl::Status status = CheckSessionRoutingHeader({"conv-2"}, "conv-1");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("x-session-id header (6 bytes) differs"));
  EXPECT_THAT(std::string(status.message()), ::testing::Not(HasSubstr("conv-2")));
  // Case matters: session ids are case-sensitive, so are their routing keys.
  EXPECT_EQ(CheckSessionRoutingHeader({"CONV-1"}, "conv-1").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SessionRoutingTest, HeaderWithoutSessionIdIsInvalid) {
  const absl::Status status = CheckSessionRoutingHeader({"conv-1"}, "");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("has no session_id"));
}

TEST(SessionRoutingTest, RepeatedHeaderIsInvalidEvenWhenEachValueMatches) {
  const absl::Status status = CheckSessionRoutingHeader({"conv-1", "conv-1"}, "conv-1");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("sent 2 times"));
}

}  // namespace
}  // namespace textgen::server
