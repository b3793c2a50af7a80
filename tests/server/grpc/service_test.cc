// The TextGeneration service in-process on a loopback port, with a FakeScheduler playing the
// engine thread: streaming, unary RPCs, every error code, health, drain and /metrics.
#include "server/grpc/service.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "server/core/preparation_pool.h"
#include "server/grpc/drain.h"
#include "server/observability/metrics.h"
#include "tests/testing/byte_tokenizer.h"
#include "tests/testing/fake_scheduler.h"
#include "tests/testing/http_get.h"
#include "tests/testing/temp_files.h"
#include "tests/testing/test_pki.h"
#include "textgen/v1/textgen.grpc.pb.h"

namespace textgen::server {
namespace {

using ::testing::ElementsAre;
using testing::FakeScheduler;
using ::testing::HasSubstr;

TokenEvent Token(std::string text, std::vector<int> ids) {
  TokenEvent event;
  event.text = std::move(text);
  event.token_ids = std::move(ids);
  return event;
}

FinishedEvent Finished(FinishReason reason, int prompt_tokens, int completion_tokens) {
  FinishedEvent event;
  event.reason = reason;
  event.usage.prompt_tokens = prompt_tokens;
  event.usage.completion_tokens = completion_tokens;
  event.seed = 42;
  return event;
}

struct StreamResult {
  std::vector<v1::GenerateResponse> messages;
  grpc::Status status;
  std::string Text() const {
    std::string text;
    for (const auto& m : messages) text += m.text();
    return text;
  }
};

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(/*ready=*/true, kDefaultMaxBufferedEvents); }

  // Serves /metrics on a free port (only the test that scrapes starts an HTTP endpoint).
  void StartServerWithMetricsEndpoint() {
    metrics_address_ = "127.0.0.1:0";
    StartServer(/*ready=*/true, kDefaultMaxBufferedEvents);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }

  void StartServer(bool ready, size_t max_buffered_events) {
    if (server_ != nullptr) {  // a restart with other options: the old server goes first
      server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
      server_.reset();
    }
    metrics_ =
        *Metrics::Create(MetricsOptions{.listen_address = metrics_address_, .tls = std::nullopt});
    ServiceOptions options;
    options.auth = auth::AuthPolicy(authenticator_.get(), principal_from_certificate_);
    options.observer = metrics_.get();
    options.max_buffered_events = max_buffered_events;
    service_ = std::make_unique<TextGenerationService>(options);
    backend_.scheduler = &scheduler_;
    backend_.tokenizer = &tokenizer_;
    backend_.preparation = &preparation_;
    backend_.validation.context_length = 64;
    backend_.validation.default_max_new_tokens = 16;
    backend_.validation.max_new_tokens_limit = 32;
    backend_.model_info.set_name("fake-model");
    backend_.model_info.set_vocab_size(259);
    if (ready) service_->SetBackend(&backend_);

    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", server_credentials_, &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    server_address_ = absl::StrCat("127.0.0.1:", port);
    channel_ = grpc::CreateChannel(server_address_, grpc::InsecureChannelCredentials());
    stub_ = v1::TextGeneration::NewStub(channel_);
  }

  // A stub over TLS to the running server, trusting the test CA, with `client`'s certificate.
  std::unique_ptr<v1::TextGeneration::Stub> TlsStub(const textgen::test_support::PemPair* client) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = textgen::test_support::GetTestPki().ca_cert;
    if (client != nullptr) {
      ssl.pem_private_key = client->key;
      ssl.pem_cert_chain = client->cert;
    }
    return v1::TextGeneration::NewStub(
        grpc::CreateChannel(server_address_, grpc::SslCredentials(ssl)));
  }

  // Reads a whole Generate stream.
  static StreamResult ReadAll(grpc::ClientReader<v1::GenerateResponse>& reader) {
    StreamResult result;
    v1::GenerateResponse message;
    while (reader.Read(&message)) result.messages.push_back(message);
    result.status = reader.Finish();
    return result;
  }

  // Runs a Generate call to its end while the fake scheduler does nothing with it.
  StreamResult GenerateExpectingNoSubmit(const v1::GenerateRequest& request) {
    grpc::ClientContext context;
    auto reader = stub_->Generate(&context, request);
    return ReadAll(*reader);
  }

  // grpc.health.v1.Health/Check for the whole server, by hand: the request is empty and the
  // response is field 1 (status) as a varint: 1 = SERVING, 2 = NOT_SERVING.
  int HealthStatus() {
    grpc::GenericStub generic(channel_);
    grpc::ClientContext context;
    grpc::Slice empty_message{std::string()};  // HealthCheckRequest{service: ""}
    grpc::ByteBuffer request(&empty_message, 1);
    grpc::ByteBuffer response;
    absl::Notification done;
    grpc::Status status;
    generic.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                      &response, [&](grpc::Status s) {
                        status = std::move(s);
                        done.Notify();
                      });
    done.WaitForNotification();
    if (!status.ok()) return -1;
    std::vector<grpc::Slice> slices;
    if (!response.Dump(&slices).ok()) return -1;
    std::string bytes;
    for (const grpc::Slice& s : slices)
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    if (bytes.size() != 2 || bytes[0] != 0x08) return bytes.empty() ? 0 : -1;
    return bytes[1];
  }

  std::string Scrape() { return testing::HttpGet(metrics_->port(), "/metrics"); }

  std::string metrics_address_;                         // empty: no HTTP endpoint
  std::unique_ptr<auth::Authenticator> authenticator_;  // null: no API keys
  bool principal_from_certificate_ = false;
  std::shared_ptr<grpc::ServerCredentials> server_credentials_ = grpc::InsecureServerCredentials();
  std::string server_address_;
  testing::ByteTokenizer tokenizer_;
  FakeScheduler scheduler_;
  ServiceBackend backend_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<TextGenerationService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::TextGeneration::Stub> stub_;
  // Last, so it is destroyed first: its remaining tasks run while everything they use lives.
  PreparationPool preparation_{PreparationPoolOptions{}};
};

v1::GenerateRequest TextRequest(const std::string& text) {
  v1::GenerateRequest request;
  request.set_text(text);
  return request;
}

TEST_F(ServiceTest, StreamsAGeneration) {
  v1::GenerateRequest request = TextRequest("hi");
  request.set_request_id("r-1");
  request.mutable_stopping()->set_max_new_tokens(8);
  grpc::ClientContext context;
  auto reader = stub_->Generate(&context, request);

  FakeScheduler::Submitted submitted;
  ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
  EXPECT_THAT(submitted.request.prompt_tokens, ElementsAre(1, 'h' + 3, 'i' + 3));
  EXPECT_EQ(submitted.request.stopping.max_new_tokens, 8);
  EXPECT_EQ(submitted.request.request_id, "r-1");
  // Tokenized on the preparation pool, not on a gRPC callback thread.
  EXPECT_EQ(tokenizer_.encodes_on_preparation_threads.load(), tokenizer_.encode_calls.load());
  EXPECT_GT(tokenizer_.encode_calls.load(), 0);
  EXPECT_TRUE(submitted.sink->Push(Token("Hel", {10, 11})));
  EXPECT_TRUE(submitted.sink->Push(Token("lo", {12})));
  FinishedEvent finished = Finished(FinishReason::kLength, 3, 3);
  finished.text = "!";
  EXPECT_TRUE(submitted.sink->Push(std::move(finished)));
  scheduler_.MarkDone();

  StreamResult result = ReadAll(*reader);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_FALSE(result.messages.empty());
  EXPECT_EQ(result.Text(), "Hello!");
  std::vector<int> ids;
  for (const auto& m : result.messages) {
    EXPECT_EQ(m.request_id(), "r-1");
    ids.insert(ids.end(), m.token_ids().begin(), m.token_ids().end());
  }
  EXPECT_THAT(ids, ElementsAre(10, 11, 12));
  const v1::GenerateResponse& last = result.messages.back();
  ASSERT_TRUE(last.has_finished());
  EXPECT_EQ(last.finished().reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(last.finished().usage().prompt_tokens(), 3u);
  EXPECT_EQ(last.finished().usage().completion_tokens(), 3u);
  EXPECT_EQ(last.finished().seed(), 42u);
  for (size_t i = 0; i + 1 < result.messages.size(); ++i) {
    EXPECT_FALSE(result.messages[i].has_finished());
  }
  EXPECT_TRUE(submitted.sink->IsClosed());
  EXPECT_FALSE(submitted.sink->Push(Token("late", {1})));  // after the end: harmless
}

TEST_F(ServiceTest, LogprobsAreConverted) {
  v1::GenerateRequest request = TextRequest("a");
  request.mutable_output()->set_top_logprobs(1);
  grpc::ClientContext context;
  auto reader = stub_->Generate(&context, request);
  FakeScheduler::Submitted submitted;
  ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
  EXPECT_TRUE(submitted.request.output.logprobs);
  FinishedEvent finished = Finished(FinishReason::kEos, 2, 1);
  finished.token_ids = {'x' + 3};
  finished.text = "x";
  finished.logprobs.push_back(model::SampleResult{
      .token = 'x' + 3, .logprob = -0.5f, .top = {model::TokenLogprob{'x' + 3, -0.5f}}});
  submitted.sink->Push(std::move(finished));
  scheduler_.MarkDone();
  StreamResult result = ReadAll(*reader);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_EQ(result.messages.size(), 1u);
  const v1::GenerateResponse& m = result.messages[0];
  ASSERT_EQ(m.logprobs_size(), 1);
  EXPECT_EQ(m.logprobs(0).token_id(), 'x' + 3);
  EXPECT_FLOAT_EQ(m.logprobs(0).logprob(), -0.5f);
  ASSERT_EQ(m.logprobs(0).top_size(), 1);
  EXPECT_EQ(m.logprobs(0).top(0).token(), "x");
  EXPECT_EQ(m.finished().reason(), v1::FINISH_REASON_EOS);
}

TEST_F(ServiceTest, SchedulerErrorEndsTheStreamWithItsCode) {
  grpc::ClientContext context;
  auto reader = stub_->Generate(&context, TextRequest("hi"));
  FakeScheduler::Submitted submitted;
  ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
  submitted.sink->Push(Token("a", {4}));
  submitted.sink->Push(ErrorEvent{absl::ResourceExhaustedError("KV cache is full")});
  scheduler_.MarkDone();
  StreamResult result = ReadAll(*reader);
  EXPECT_EQ(result.Text(), "a");
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(result.status.error_message(), "KV cache is full");
}

TEST_F(ServiceTest, InvalidArgument) {
  v1::GenerateRequest request = TextRequest("hi");
  request.mutable_sampling()->set_temperature(-1);
  StreamResult result = GenerateExpectingNoSubmit(request);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(result.status.error_message(), HasSubstr("sampling.temperature"));
  EXPECT_TRUE(result.messages.empty());
}

TEST_F(ServiceTest, OutOfRange) {
  v1::GenerateRequest request = TextRequest(std::string(40, 'a'));
  request.mutable_stopping()->set_max_new_tokens(30);
  StreamResult result = GenerateExpectingNoSubmit(request);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_THAT(result.status.error_message(), HasSubstr("context length of 64"));
}

TEST_F(ServiceTest, ResourceExhaustedWhenTheQueueIsFull) {
  scheduler_.set_max_queue(0);
  StreamResult result = GenerateExpectingNoSubmit(TextRequest("hi"));
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(result.status.error_message(), HasSubstr("queue is full"));
}

TEST_F(ServiceTest, DeadlineExceeded) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  auto reader = stub_->Generate(&context, TextRequest("hi"));
  FakeScheduler::Submitted submitted;
  ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
  EXPECT_LT(submitted.request.deadline, absl::Now() + absl::Seconds(1));
  StreamResult result = ReadAll(*reader);  // the fake never answers
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server side sees the stream closed, so the scheduler would drop the request.
  for (int i = 0; i < 200 && !submitted.sink->IsClosed(); ++i)
    absl::SleepFor(absl::Milliseconds(10));
  EXPECT_TRUE(submitted.sink->IsClosed());
  EXPECT_FALSE(submitted.sink->Push(Token("x", {4})));
  scheduler_.MarkDone();
}

TEST_F(ServiceTest, CancelledByTheClient) {
  grpc::ClientContext context;
  auto reader = stub_->Generate(&context, TextRequest("hi"));
  FakeScheduler::Submitted submitted;
  ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
  ASSERT_TRUE(submitted.sink->Push(Token("a", {4})));
  v1::GenerateResponse first;
  ASSERT_TRUE(reader->Read(&first));
  EXPECT_EQ(first.text(), "a");
  context.TryCancel();
  v1::GenerateResponse ignored;
  while (reader->Read(&ignored)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  for (int i = 0; i < 200 && !submitted.sink->IsClosed(); ++i)
    absl::SleepFor(absl::Milliseconds(10));
  EXPECT_TRUE(submitted.sink->IsClosed());
  EXPECT_FALSE(submitted.sink->Push(Token("b", {5})));
  scheduler_.MarkDone();
}

TEST_F(ServiceTest, SlowReaderIsCutOffWithResourceExhausted) {
  StartServer(/*ready=*/true, /*max_buffered_events=*/4);
  grpc::ClientContext context;
  auto reader = stub_->Generate(&context, TextRequest("hi"));
  FakeScheduler::Submitted submitted;
  ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
  // The client reads nothing: once HTTP/2 flow control stops the writes, the outbox fills.
  const std::string chunk(16 << 10, 'x');
  bool refused = false;
  for (int i = 0; i < 4000 && !refused; ++i) refused = !submitted.sink->Push(Token(chunk, {4}));
  ASSERT_TRUE(refused) << "the outbox never filled";
  EXPECT_TRUE(submitted.sink->IsClosed());
  scheduler_.MarkDone();
  StreamResult result = ReadAll(*reader);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(result.status.error_message(),
              HasSubstr("client is not reading its stream fast enough"));
}

TEST_F(ServiceTest, UnavailableWhileLoading) {
  StartServer(/*ready=*/false, kDefaultMaxBufferedEvents);
  StreamResult result = GenerateExpectingNoSubmit(TextRequest("hi"));
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(result.status.error_message(), HasSubstr("loading"));
  grpc::ClientContext context;
  v1::ModelInfo info;
  EXPECT_EQ(stub_->GetModelInfo(&context, v1::GetModelInfoRequest(), &info).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

// Control tokens typed in text stay text unless the caller asks (a chat template's output).
TEST_F(ServiceTest, ParseSpecialIsOptInForTokenizeAndGenerate) {
  grpc::ClientContext c1;
  v1::TokenizeRequest tokenize;
  tokenize.set_text("a</s>");
  tokenize.set_add_bos(false);
  v1::TokenizeResponse tokens;
  ASSERT_TRUE(stub_->Tokenize(&c1, tokenize, &tokens).ok());
  EXPECT_THAT(tokens.ids(), ElementsAre('a' + 3, '<' + 3, '/' + 3, 's' + 3, '>' + 3));
  grpc::ClientContext c2;
  tokenize.set_parse_special(true);
  ASSERT_TRUE(stub_->Tokenize(&c2, tokenize, &tokens).ok());
  EXPECT_THAT(tokens.ids(), ElementsAre('a' + 3, 2));

  for (bool parse : {false, true}) {
    v1::GenerateRequest request = TextRequest("<s>x");
    request.set_parse_special(parse);
    grpc::ClientContext context;
    auto reader = stub_->Generate(&context, request);
    FakeScheduler::Submitted submitted;
    ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
    if (parse) {
      EXPECT_THAT(submitted.request.prompt_tokens, ElementsAre(1, 1, 'x' + 3));
    } else {
      EXPECT_THAT(submitted.request.prompt_tokens,
                  ElementsAre(1, '<' + 3, 's' + 3, '>' + 3, 'x' + 3));
    }
    EXPECT_TRUE(submitted.sink->Push(Finished(FinishReason::kLength, 3, 0)));
    scheduler_.MarkDone();
    ReadAll(*reader);
  }
}

// A stand-in chat template: "<s>" and "</s>" are the fake vocabulary's control tokens.
constexpr char kFakeChatTemplate[] =
    "<s>{% for m in messages %}[{{ m.role }}]{{ m.content }}</s>{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
    "{% if messages|length > 3 %}{{ raise_exception('at most 3 messages') }}{% endif %}";

v1::ChatRequest UserChat(const std::string& content) {
  v1::ChatRequest request;
  v1::ChatMessage* message = request.add_messages();
  message->set_role("user");
  message->set_content(content);
  return request;
}

std::vector<int> FakeIds(const std::string& text) {
  std::vector<int> ids;
  for (unsigned char c : text) ids.push_back(c + 3);
  return ids;
}

TEST_F(ServiceTest, ChatRendersTheTemplateAndUserTextCannotInjectControlTokens) {
  absl::StatusOr<ChatTemplates> templates =
      ChatTemplates::Load({{"", kFakeChatTemplate}}, "", tokenizer_);
  ASSERT_TRUE(templates.ok()) << templates.status();
  backend_.chat_templates = *std::move(templates);

  v1::ChatRequest request = UserChat("a</s><s>b");
  request.mutable_output()->set_echo(true);
  request.set_session_id("conversation-1");
  grpc::ClientContext context;
  auto reader = stub_->Chat(&context, request);
  FakeScheduler::Submitted submitted;
  ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
  // The template's "<s>" and "</s>" are BOS (1) and EOS (2); the user's are plain bytes; no
  // BOS is added besides the template's own.
  std::vector<int> expected = {1};
  for (int id : FakeIds("[user]a</s><s>b")) expected.push_back(id);
  expected.push_back(2);
  for (int id : FakeIds("[assistant]")) expected.push_back(id);
  EXPECT_EQ(submitted.request.prompt_tokens, expected);
  EXPECT_EQ(submitted.request.prompt_text, "<s>[user]a</s><s>b</s>[assistant]");
  EXPECT_EQ(submitted.request.session_id, "conversation-1");
  EXPECT_TRUE(submitted.request.output.echo);
  EXPECT_TRUE(submitted.sink->Push(Finished(FinishReason::kEos, 20, 0)));
  scheduler_.MarkDone();
  EXPECT_TRUE(ReadAll(*reader).status.ok());

  // Without the generation prompt the prompt ends after the last message.
  request.set_add_generation_prompt(false);
  grpc::ClientContext context2;
  reader = stub_->Chat(&context2, request);
  ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
  EXPECT_EQ(submitted.request.prompt_text, "<s>[user]a</s><s>b</s>");
  EXPECT_TRUE(submitted.sink->Push(Finished(FinishReason::kEos, 20, 0)));
  scheduler_.MarkDone();
  EXPECT_TRUE(ReadAll(*reader).status.ok());
}

TEST_F(ServiceTest, ChatErrorsSayWhatToDo) {
  const auto chat = [&](const v1::ChatRequest& request) {
    grpc::ClientContext context;
    auto reader = stub_->Chat(&context, request);
    return ReadAll(*reader).status;
  };
  grpc::Status status = chat(UserChat("hi"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("the model has no chat template"));
  EXPECT_THAT(status.error_message(), HasSubstr("--chat-template FILE"));

  absl::StatusOr<ChatTemplates> templates =
      ChatTemplates::Load({{"", kFakeChatTemplate}, {"broken", "{% if %}"}}, "", tokenizer_);
  ASSERT_TRUE(templates.ok()) << templates.status();
  backend_.chat_templates = *std::move(templates);

  v1::ChatRequest too_long = UserChat("1");
  for (int i = 0; i < 3; ++i) *too_long.add_messages() = too_long.messages(0);
  status = chat(too_long);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "the chat template refused the conversation: at most 3 messages");

  status = chat(v1::ChatRequest());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("messages is empty"));

  v1::ChatRequest no_role = UserChat("x");
  no_role.mutable_messages(0)->clear_role();
  status = chat(no_role);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("messages[0].role is empty"));

  v1::ChatRequest named = UserChat("x");
  named.set_template_name("tool_use");
  status = chat(named);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("template_name 'tool_use' is not one of"));

  named.set_template_name(std::string(200, 'x'));
  status = chat(named);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("template_name is 200 bytes; at most 128"));

  named.set_template_name("broken");
  status = chat(named);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("chat template 'broken' cannot be used"));
  EXPECT_THAT(status.error_message(), HasSubstr("line 1, column 7"));

  v1::ChatRequest bad_variables = UserChat("x");
  bad_variables.set_template_variables_json("{\"enable_thinking\": ");
  status = chat(bad_variables);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("template_variables is not valid JSON"));

  // Generate's own checks apply to Chat too, before the template runs.
  v1::ChatRequest bad_sampling = UserChat("x");
  bad_sampling.mutable_sampling()->set_temperature(-1);
  status = chat(bad_sampling);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("sampling.temperature"));
  FakeScheduler::Submitted none;
  EXPECT_FALSE(scheduler_.TakeSubmitted(none, absl::ZeroDuration()));  // nothing got through
}

TEST_F(ServiceTest, DetokenizeRendersControlTokensOnlyWhenAsked) {
  v1::DetokenizeRequest detokenize;
  for (int id : {'o' + 3, 2}) detokenize.add_ids(id);
  v1::DetokenizeResponse text;
  grpc::ClientContext c1;
  ASSERT_TRUE(stub_->Detokenize(&c1, detokenize, &text).ok());
  EXPECT_EQ(text.text(), "o");
  detokenize.set_render_control(true);
  grpc::ClientContext c2;
  ASSERT_TRUE(stub_->Detokenize(&c2, detokenize, &text).ok());
  EXPECT_EQ(text.text(), "o</s>");
}

TEST_F(ServiceTest, TokenizeAndDetokenize) {
  grpc::ClientContext c1;
  v1::TokenizeRequest tokenize;
  tokenize.set_text("ab");
  v1::TokenizeResponse tokens;
  ASSERT_TRUE(stub_->Tokenize(&c1, tokenize, &tokens).ok());
  EXPECT_THAT(tokens.ids(), ElementsAre(1, 'a' + 3, 'b' + 3));
  EXPECT_THAT(tokens.tokens(), ElementsAre("<s>", "a", "b"));

  grpc::ClientContext c2;
  tokenize.set_add_bos(false);
  ASSERT_TRUE(stub_->Tokenize(&c2, tokenize, &tokens).ok());
  EXPECT_THAT(tokens.ids(), ElementsAre('a' + 3, 'b' + 3));

  grpc::ClientContext c4;
  v1::DetokenizeRequest detokenize;
  for (int id : {1, 'o' + 3, 'k' + 3}) detokenize.add_ids(id);
  v1::DetokenizeResponse text;
  ASSERT_TRUE(stub_->Detokenize(&c4, detokenize, &text).ok());
  EXPECT_EQ(text.text(), "ok");

  grpc::ClientContext c5;
  detokenize.add_ids(0xC3 + 3);  // half of a two-byte character: replaced, stays valid UTF-8
  ASSERT_TRUE(stub_->Detokenize(&c5, detokenize, &text).ok());
  EXPECT_EQ(text.text(), "ok\xEF\xBF\xBD");

  grpc::ClientContext c6;
  detokenize.add_ids(259);
  grpc::Status status = stub_->Detokenize(&c6, detokenize, &text);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("ids[4] = 259"));
}

TEST_F(ServiceTest, GetModelInfo) {
  grpc::ClientContext context;
  v1::ModelInfo info;
  ASSERT_TRUE(stub_->GetModelInfo(&context, v1::GetModelInfoRequest(), &info).ok());
  EXPECT_EQ(info.name(), "fake-model");
  EXPECT_EQ(info.vocab_size(), 259u);
}

TEST_F(ServiceTest, DeleteSession) {
  scheduler_.AddSession("chat-1", 17);
  v1::DeleteSessionRequest request;
  request.set_session_id("chat-1");
  v1::DeleteSessionResponse response;
  grpc::ClientContext c1;
  ASSERT_TRUE(stub_->DeleteSession(&c1, request, &response).ok());
  EXPECT_EQ(response.freed_tokens(), 17u);
  grpc::ClientContext c2;
  EXPECT_EQ(stub_->DeleteSession(&c2, request, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  grpc::ClientContext c3;
  request.set_session_id("bad id");
  EXPECT_EQ(stub_->DeleteSession(&c3, request, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// Load balancers route on the x-session-id metadata; a request whose metadata names another
// session than its session_id would be cached where the balancer does not send its next turn.
TEST_F(ServiceTest, SessionRoutingMetadataMustNameTheRequestsSession) {
  v1::GenerateRequest request = TextRequest("hi");
  request.set_session_id("conv-1");
  {
    grpc::ClientContext context;
    context.AddMetadata("x-session-id", "conv-1");
    auto reader = stub_->Generate(&context, request);
    FakeScheduler::Submitted submitted;
    ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
    EXPECT_THAT(submitted.request.session_id, HasSubstr("conv-1"));
    submitted.sink->Push(Finished(FinishReason::kLength, 3, 0));
    scheduler_.MarkDone();
    EXPECT_TRUE(ReadAll(*reader).status.ok());
  }
  const auto refused = [&](const std::string& metadata, const v1::GenerateRequest& r) {
    grpc::ClientContext context;
    context.AddMetadata("x-session-id", metadata);
    auto reader = stub_->Generate(&context, r);
    return ReadAll(*reader).status;
  };
  grpc::Status status = refused("conv-2", request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("x-session-id header (6 bytes) differs"));
  status = refused("conv-1", TextRequest("no session"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("has no session_id"));

  v1::ChatRequest chat;
  chat.add_messages()->set_content("hi");
  chat.set_session_id("conv-1");
  grpc::ClientContext chat_context;
  chat_context.AddMetadata("x-session-id", "conv-9");
  auto chat_reader = stub_->Chat(&chat_context, chat);
  EXPECT_EQ(ReadAll(*chat_reader).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  scheduler_.AddSession("conv-1", 5);
  v1::DeleteSessionRequest del;
  del.set_session_id("conv-1");
  v1::DeleteSessionResponse deleted;
  grpc::ClientContext wrong;
  wrong.AddMetadata("x-session-id", "conv-2");
  EXPECT_EQ(stub_->DeleteSession(&wrong, del, &deleted).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  grpc::ClientContext right;
  right.AddMetadata("x-session-id", "conv-1");
  ASSERT_TRUE(stub_->DeleteSession(&right, del, &deleted).ok());
  EXPECT_EQ(deleted.freed_tokens(), 5u);
  FakeScheduler::Submitted leaked;
  EXPECT_FALSE(scheduler_.TakeSubmitted(leaked, absl::Milliseconds(100)))
      << "a refused request reached the scheduler";
}

// Whether a TCP connection to 127.0.0.1:`port` is refused (nothing listens there).
bool ConnectionRefused(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool refused =
      connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0;
  close(fd);
  return refused;
}

// A draining server stops listening at once (so balancers move new requests elsewhere) but
// lets the running stream finish.
TEST_F(ServiceTest, DrainClosesTheListenerAndLetsRunningStreamsFinish) {
  SetServing(*server_, true);
  EXPECT_EQ(HealthStatus(), 1);  // SERVING

  grpc::ClientContext context;
  auto reader = stub_->Generate(&context, TextRequest("hi"));
  FakeScheduler::Submitted running;
  ASSERT_TRUE(scheduler_.TakeSubmitted(running));

  DrainResult drain;
  std::thread drainer([&] {
    drain = DrainAndShutdown(*server_, &preparation_, &scheduler_, absl::Seconds(20), nullptr);
  });
  for (int i = 0; i < 200 && HealthStatus() == 1; ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_NE(HealthStatus(), 1) << "still SERVING while draining";
  // Health flips first, then the listener closes: a client connecting in between is accepted
  // and its call cancelled by the shutdown, so wait for the port to close.
  const int port = std::stoi(server_address_.substr(server_address_.rfind(':') + 1));
  for (int i = 0; i < 200 && !ConnectionRefused(port); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(ConnectionRefused(port)) << "still listening while draining";
  // A new client cannot connect at all; the existing channel's new calls are refused too.
  // Its own subchannel pool: gRPC would otherwise reuse the open connection of `channel_`
  // (a global pool per address) and race the server's GOAWAY (CANCELLED instead).
  grpc::ChannelArguments own_connection;
  own_connection.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto fresh = v1::TextGeneration::NewStub(grpc::CreateCustomChannel(
      server_address_, grpc::InsecureChannelCredentials(), own_connection));
  grpc::ClientContext fresh_context;
  fresh_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto fresh_reader = fresh->Generate(&fresh_context, TextRequest("new client"));
  EXPECT_EQ(ReadAll(*fresh_reader).status.error_code(), grpc::StatusCode::UNAVAILABLE);
  // On the existing channel the call races the server's GOAWAY: refused as UNAVAILABLE, or
  // CANCELLED when it went out on the old connection just before (seen in a loaded ctest run);
  // never accepted.
  StreamResult refused = GenerateExpectingNoSubmit(TextRequest("again"));
  EXPECT_THAT(refused.status.error_code(),
              ::testing::AnyOf(grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::CANCELLED));

  // The running request still completes, then the drain ends.
  running.sink->Push(Finished(FinishReason::kLength, 3, 0));
  scheduler_.MarkDone();
  StreamResult result = ReadAll(*reader);
  EXPECT_TRUE(result.status.ok()) << result.status.error_message();
  drainer.join();
  EXPECT_TRUE(drain.idle);
  server_->Wait();
}

TEST_F(ServiceTest, MetricsCountOutcomesByCode) {
  StartServerWithMetricsEndpoint();
  {
    grpc::ClientContext context;
    auto reader = stub_->Generate(&context, TextRequest("hi"));
    FakeScheduler::Submitted submitted;
    ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
    submitted.sink->Push(Token("ab", {4, 5}));
    submitted.sink->Push(Finished(FinishReason::kLength, 3, 2));
    scheduler_.MarkDone();
    ASSERT_TRUE(ReadAll(*reader).status.ok());
  }
  v1::GenerateRequest bad = TextRequest("hi");
  bad.mutable_sampling()->set_top_p(2);
  GenerateExpectingNoSubmit(bad);
  GenerateExpectingNoSubmit(bad);

  // OnDone (which records) may run just after the client sees the status.
  std::string page;
  for (int i = 0; i < 100; ++i) {
    page = Scrape();
    if (page.find("textgen_requests_total{code=\"INVALID_ARGUMENT\"} 2") != std::string::npos &&
        page.find("textgen_requests_total{code=\"OK\"} 1") != std::string::npos) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_THAT(page, HasSubstr(" 200 OK"));
  EXPECT_THAT(page, HasSubstr("textgen_requests_total{code=\"OK\"} 1"));
  EXPECT_THAT(page, HasSubstr("textgen_requests_total{code=\"INVALID_ARGUMENT\"} 2"));
  EXPECT_THAT(page, HasSubstr("textgen_prompt_tokens_total{api=\"grpc\"} 3"));
  EXPECT_THAT(page, HasSubstr("textgen_generated_tokens_total 2"));
  EXPECT_THAT(page, HasSubstr("textgen_request_duration_seconds_count 3"));
}

// A call refused before any work (the model still loading, a missing key) is counted like any
// other outcome, whichever method it called.
TEST_F(ServiceTest, RefusalsBeforeWorkAreCounted) {
  metrics_address_ = "127.0.0.1:0";
  StartServer(/*ready=*/false, kDefaultMaxBufferedEvents);
  EXPECT_EQ(GenerateExpectingNoSubmit(TextRequest("hi")).status.error_code(),
            grpc::StatusCode::UNAVAILABLE);
  {
    grpc::ClientContext context;
    v1::TokenizeRequest request;
    request.set_text("hi");
    v1::TokenizeResponse response;
    EXPECT_EQ(stub_->Tokenize(&context, request, &response).error_code(),
              grpc::StatusCode::UNAVAILABLE);
  }
  EXPECT_THAT(Scrape(), HasSubstr("textgen_requests_total{code=\"UNAVAILABLE\"} 2"));
}

// With API keys every RPC but health needs a valid key, and sessions belong to the principal:
// the same session id from two principals names two caches, and one cannot delete the other's.
TEST_F(ServiceTest, ApiKeysAuthenticateAndScopeSessions) {
  const std::string keys_file = test_support::TestTempPath("api_keys");
  {
    std::ofstream out(keys_file);
    out << "# principal key\nalice alice-key-0123456789\nbob   bob-key-0123456789abc\n";
  }
  authenticator_ = *auth::Authenticator::Create(keys_file);
  StartServer(/*ready=*/true, kDefaultMaxBufferedEvents);
  const auto as = [](grpc::ClientContext& context, const std::string& key) {
    context.AddMetadata("authorization", "Bearer " + key);
  };

  v1::GenerateRequest request = TextRequest("hi");
  request.set_session_id("s");
  StreamResult missing = GenerateExpectingNoSubmit(request);
  EXPECT_EQ(missing.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(missing.status.error_message(), HasSubstr("missing API key"));
  {
    grpc::ClientContext context;
    as(context, "alice-key-0123456789-wrong");
    auto reader = stub_->Generate(&context, request);
    StreamResult wrong = ReadAll(*reader);
    EXPECT_EQ(wrong.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(wrong.status.error_message(), "invalid API key");
  }
  EXPECT_EQ(HealthStatus(), 1) << "health checks stay reachable without a key";
  {
    grpc::ClientContext context;
    v1::ModelInfo info;
    EXPECT_EQ(stub_->GetModelInfo(&context, v1::GetModelInfoRequest(), &info).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }

  for (const auto& [key, principal] :
       {std::pair{"alice-key-0123456789", "alice"}, std::pair{"bob-key-0123456789abc", "bob"}}) {
    grpc::ClientContext context;
    as(context, key);
    auto reader = stub_->Generate(&context, request);
    FakeScheduler::Submitted submitted;
    ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
    EXPECT_EQ(submitted.request.principal, principal);
    EXPECT_EQ(submitted.request.session_id, std::string(principal) + "/s");
    submitted.sink->Push(Finished(FinishReason::kLength, 3, 0));
    scheduler_.MarkDone();
    EXPECT_TRUE(ReadAll(*reader).status.ok());
  }

  scheduler_.AddSession("alice/s", 7);
  v1::DeleteSessionRequest delete_request;
  delete_request.set_session_id("s");
  v1::DeleteSessionResponse deleted;
  {
    grpc::ClientContext context;
    as(context, "bob-key-0123456789abc");
    EXPECT_EQ(stub_->DeleteSession(&context, delete_request, &deleted).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext context;
    as(context, "alice-key-0123456789");
    ASSERT_TRUE(stub_->DeleteSession(&context, delete_request, &deleted).ok());
    EXPECT_EQ(deleted.freed_tokens(), 7u);
  }
}

// Mutual TLS without API keys: gRPC's own handshake refuses clients without a certificate the
// CA signed, and the certificate's subject (the same RFC 2253 text the HTTP listener reports)
// is the principal its sessions belong to.
TEST_F(ServiceTest, MutualTlsCertificateSubjectIsThePrincipal) {
  const textgen::test_support::TestPki& pki = textgen::test_support::GetTestPki();
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = pki.ca_cert;
  ssl.pem_key_cert_pairs.push_back({pki.server.key, pki.server.cert});
  server_credentials_ = grpc::SslServerCredentials(ssl);
  principal_from_certificate_ = true;
  StartServer(/*ready=*/true, kDefaultMaxBufferedEvents);

  v1::GenerateRequest request = TextRequest("hi");
  request.set_session_id("s");
  for (const auto& [client, principal] : {std::pair{&pki.alice, "CN=alice,O=textgen test"},
                                          std::pair{&pki.bob, "CN=bob,O=textgen test"}}) {
    std::unique_ptr<v1::TextGeneration::Stub> stub = TlsStub(client);
    grpc::ClientContext context;
    auto reader = stub->Generate(&context, request);
    FakeScheduler::Submitted submitted;
    ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
    EXPECT_EQ(submitted.request.principal, principal);
    EXPECT_EQ(submitted.request.session_id, std::string(principal) + "/s");
    submitted.sink->Push(Finished(FinishReason::kLength, 3, 0));
    scheduler_.MarkDone();
    EXPECT_TRUE(ReadAll(*reader).status.ok());
  }

  for (const textgen::test_support::PemPair* refused :
       {static_cast<const textgen::test_support::PemPair*>(nullptr), &pki.stranger}) {
    std::unique_ptr<v1::TextGeneration::Stub> stub = TlsStub(refused);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    v1::ModelInfo info;
    EXPECT_EQ(stub->GetModelInfo(&context, v1::GetModelInfoRequest(), &info).error_code(),
              grpc::StatusCode::UNAVAILABLE)
        << (refused == nullptr ? "no client certificate" : "a certificate from another CA");
  }
  EXPECT_EQ(HealthStatus(), -1) << "the plain-text channel gets nowhere";
}

}  // namespace
}  // namespace textgen::server
