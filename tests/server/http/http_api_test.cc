// The HTTP front end in process: the real HttpServer, router and API families over a fake
// scheduler (the test plays the engine thread), driven by a Beast client over loopback.
#include "server/http/http_api.h"

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/chat_validation.h"
#include "server/core/preparation_pool.h"
#include "server/transport/http_server.h"
#include "tests/testing/byte_tokenizer.h"
#include "tests/testing/fake_scheduler.h"
#include "tests/testing/temp_files.h"

namespace textgen::server::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Json = nlohmann::json;
using ::testing::HasSubstr;

class RecordingObserver final : public RequestObserver {
 public:
  void OnRequestDone(const RequestRecord& record) override {
    absl::MutexLock lock(&mu_);
    records_.push_back(record);
  }
  // Waits until `n` records arrived; returns them.
  std::vector<RequestRecord> WaitFor(size_t n) {
    absl::MutexLock lock(&mu_);
    const auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return records_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
    return records_;
  }

 private:
  absl::Mutex mu_;
  std::vector<RequestRecord> records_ ABSL_GUARDED_BY(mu_);
};

struct Reply {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string www_authenticate;
};

// Writes `keys` to a file and loads it (null: no API keys).
std::unique_ptr<auth::Authenticator> MakeAuthenticator(const char* keys) {
  if (keys == nullptr) return nullptr;
  const std::string path = test_support::TestTempPath("api_keys");
  std::ofstream(path) << keys;
  return *auth::Authenticator::Create(path);
}

HttpApiOptions ApiOptions(const auth::Authenticator* authenticator, RequestObserver* observer) {
  HttpApiOptions options;
  options.auth = auth::AuthPolicy(authenticator, false);
  options.observer = observer;
  return options;
}

class HttpApiTest : public ::testing::Test {
 protected:
  explicit HttpApiTest(const char* keys = nullptr)
      : authenticator_(MakeAuthenticator(keys)),
        api_(ApiOptions(authenticator_.get(), &observer_)) {
    backend_.scheduler = &scheduler_;
    backend_.tokenizer = &tokenizer_;
    backend_.preparation = &preparation_;
    backend_.validation.context_length = 64;
    backend_.validation.max_new_tokens_limit = 32;
    backend_.model_info.set_name("tiny");
    backend_.model_info.set_context_length(64);
    HttpServerOptions options;
    options.max_body_bytes = 4096;
    absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(
        options,
        [this](const HttpRequest& request, std::shared_ptr<HttpExchange> exchange) {
          api_.Handle(request, std::move(exchange));
        },
        [this](int status, absl::string_view message) {
          return api_.TransportError(status, message);
        });
    EXPECT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  ~HttpApiTest() override { server_->Stop(); }

  void Ready() { api_.SetBackend(&backend_); }
  // Chat and Responses render with "<role>content" lines.
  void UseChatTemplate() {
    absl::StatusOr<ChatTemplates> templates = ChatTemplates::Load(
        {{"", "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"}}, "",
        tokenizer_);
    ASSERT_TRUE(templates.ok()) << templates.status();
    backend_.chat_templates = *std::move(templates);
  }

  tcp::socket Connect() {
    tcp::socket socket(io_);
    socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), server_->port()));
    return socket;
  }

  Reply Send(tcp::socket& socket, bhttp::verb verb, const std::string& target,
             const std::string& body = "", const std::string& authorization = "",
             const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    bhttp::request<bhttp::string_body> request{verb, target, 11};
    request.set(bhttp::field::host, "localhost");
    if (!authorization.empty()) request.set(bhttp::field::authorization, authorization);
    for (const auto& [name, value] : headers) request.insert(name, value);
    request.set(bhttp::field::content_type, "application/json");
    request.body() = body;
    request.prepare_payload();
    bhttp::write(socket, request);
    beast::flat_buffer buffer;
    bhttp::response<bhttp::string_body> response;
    bhttp::read(socket, buffer, response);
    return Reply{static_cast<int>(response.result_int()), response.body(),
                 std::string(response[bhttp::field::content_type]),
                 std::string(response[bhttp::field::www_authenticate])};
  }
  Reply Post(const std::string& target, const std::string& body) {
    tcp::socket socket = Connect();
    return Send(socket, bhttp::verb::post, target, body);
  }
  Reply Get(const std::string& target) {
    tcp::socket socket = Connect();
    return Send(socket, bhttp::verb::get, target);
  }

  // Plays the engine: takes the next request and finishes it with "hi" (2 tokens).
  std::thread Engine(FinishReason reason, bool with_logprobs = false) {
    return std::thread([this, reason, with_logprobs] {
      testing::FakeScheduler::Submitted submitted;
      ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
      last_prompt_text_ = submitted.request.prompt_text;
      TokenEvent token;
      token.text = "h";
      token.token_ids = {'h' + 3};
      FinishedEvent finished;
      finished.reason = reason;
      finished.text = "i";
      finished.token_ids = {'i' + 3};
      if (with_logprobs) {
        token.logprobs = {{'h' + 3, -0.25f, {{'h' + 3, -0.25f}, {'a' + 3, -2.0f}}}};
        finished.logprobs = {{'i' + 3, -0.5f, {{'i' + 3, -0.5f}, {'o' + 3, -1.5f}}}};
      }
      finished.usage = {.prompt_tokens = 5, .cached_tokens = 3, .completion_tokens = 2};
      EXPECT_TRUE(submitted.sink->Push(token));
      EXPECT_TRUE(submitted.sink->Push(finished));
      scheduler_.MarkDone();
    });
  }

  net::io_context io_;
  std::unique_ptr<auth::Authenticator> authenticator_;
  RecordingObserver observer_;
  std::string last_prompt_text_;  // of the request Engine() took
  testing::FakeScheduler scheduler_;
  testing::ByteTokenizer tokenizer_;
  ServiceBackend backend_;
  HttpApi api_;
  std::unique_ptr<HttpServer> server_;
  // Last, so it is destroyed first: its remaining tasks run while everything they use lives.
  PreparationPool preparation_{PreparationPoolOptions{}};
};

TEST_F(HttpApiTest, HealthFollowsLoadingServingAndDraining) {
  Reply reply = Get("/health");
  EXPECT_EQ(reply.status, 503);
  EXPECT_EQ(Json::parse(reply.body)["status"], "loading");
  reply = Post("/v1/completions", R"({"prompt": "x"})");
  EXPECT_EQ(reply.status, 503);
  EXPECT_THAT(reply.body, HasSubstr("still loading"));
  Ready();
  EXPECT_EQ(Get("/health").status, 200);
  api_.StartDraining();
  reply = Get("/health");
  EXPECT_EQ(reply.status, 503);
  EXPECT_EQ(Json::parse(reply.body)["status"], "draining");
}

TEST_F(HttpApiTest, CompletionWithUsageAndCachedTokens) {
  Ready();
  std::thread engine = Engine(FinishReason::kStopSequence);
  const Reply reply = Post("/v1/completions", R"({"model": "tiny", "prompt": "abc", "seed": 5})");
  engine.join();
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.content_type, "application/json");
  const Json body = Json::parse(reply.body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_THAT(body["id"].get<std::string>(), ::testing::StartsWith("cmpl-req-"));
  EXPECT_EQ(body["choices"][0]["text"], "hi");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(body["usage"]["completion_tokens"], 2);
  EXPECT_EQ(body["usage"]["total_tokens"], 7);
  EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
  const std::vector<RequestRecord> records = observer_.WaitFor(1);
  EXPECT_EQ(records[0].code, absl::StatusCode::kOk);
  EXPECT_STREQ(records[0].api, "http");
  EXPECT_EQ(records[0].completion_tokens, 2);
  // Parsed and tokenized on the preparation pool, not on the HTTP I/O threads.
  EXPECT_GT(tokenizer_.encode_calls.load(), 0);
  EXPECT_EQ(tokenizer_.encodes_on_preparation_threads.load(), tokenizer_.encode_calls.load());
}

TEST_F(HttpApiTest, ChatStreamIsServerSentEventsWithUsageAndDone) {
  Ready();
  // The backend has no chat template: chat fails clearly.
  const Reply no_template =
      Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(no_template.status, 409);
  EXPECT_THAT(no_template.body, HasSubstr("template"));

  std::thread engine = Engine(FinishReason::kLength);
  const Reply reply = Post("/v1/completions", R"({"prompt": "abc", "stream": true,
                                  "stream_options": {"include_usage": true}})");
  engine.join();
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.content_type, "text/event-stream");
  std::vector<Json> events;
  size_t at = 0;
  bool done = false;
  while (at < reply.body.size()) {
    const size_t end = reply.body.find("\n\n", at);
    ASSERT_NE(end, std::string::npos) << "unterminated event in " << reply.body;
    const std::string line = reply.body.substr(at, end - at);
    ASSERT_EQ(line.rfind("data: ", 0), 0u) << line;
    if (line == "data: [DONE]") {
      done = true;
    } else {
      ASSERT_FALSE(done) << "event after [DONE]";
      events.push_back(Json::parse(line.substr(6)));
    }
    at = end + 2;
  }
  EXPECT_TRUE(done);
  ASSERT_EQ(events.size(), 3u) << reply.body;
  EXPECT_EQ(events[0]["choices"][0]["text"], "h");
  EXPECT_TRUE(events[0]["usage"].is_null());
  EXPECT_EQ(events[1]["choices"][0]["text"], "i");
  EXPECT_EQ(events[1]["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(events[2]["choices"].empty());
  EXPECT_EQ(events[2]["usage"]["completion_tokens"], 2);
}

TEST_F(HttpApiTest, CompletionLogprobsAreLegacyParallelArrays) {
  Ready();
  std::thread engine = Engine(FinishReason::kLength, /*with_logprobs=*/true);
  const Reply reply = Post("/v1/completions", R"({"prompt": "abc", "logprobs": 2})");
  engine.join();
  ASSERT_EQ(reply.status, 200) << reply.body;
  const Json logprobs = Json::parse(reply.body)["choices"][0]["logprobs"];
  EXPECT_EQ(logprobs["tokens"], Json::array({"h", "i"}));
  EXPECT_EQ(logprobs["token_logprobs"], Json::array({-0.25, -0.5}));
  EXPECT_EQ(logprobs["top_logprobs"][0], Json({{"h", -0.25}, {"a", -2.0}}));
  EXPECT_EQ(logprobs["text_offset"], Json::array({0, 1}));
}

TEST_F(HttpApiTest, ErrorsHaveOpenAiShapeAndStatus) {
  Ready();
  Reply reply = Post("/v1/completions", R"({"prompt": "abc", "temperature": -1})");
  EXPECT_EQ(reply.status, 400);
  Json error = Json::parse(reply.body)["error"];
  EXPECT_EQ(error["type"], "invalid_request_error");
  EXPECT_EQ(error["param"], "temperature");
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("temperature must be"));

  reply = Post("/v1/completions", R"({"prompt": "abc", "model": "gpt-4o"})");
  EXPECT_EQ(reply.status, 404);
  EXPECT_EQ(Json::parse(reply.body)["error"]["code"], "model_not_found");

  reply = Post("/v1/completions", R"({"prompt": "abc", "max_tokens": 60})");
  EXPECT_EQ(reply.status, 400);
  EXPECT_THAT(reply.body, HasSubstr("max_tokens must be in [1, 32]"));

  reply =
      Post("/v1/completions", "{\"max_tokens\": 10, \"prompt\": \"" + std::string(60, 'a') + "\"}");
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(Json::parse(reply.body)["error"]["code"], "context_length_exceeded");

  reply = Post("/v1/completions", std::string(5000, ' '));
  EXPECT_EQ(reply.status, 413);
  EXPECT_THAT(reply.body, HasSubstr("4096"));

  reply = Get("/v1/nope");
  EXPECT_EQ(reply.status, 404);
  reply = Get("/v1/completions");
  EXPECT_EQ(reply.status, 405);

  scheduler_.set_max_queue(0);
  reply = Post("/v1/completions", R"({"prompt": "abc"})");
  EXPECT_EQ(reply.status, 429);
  EXPECT_EQ(Json::parse(reply.body)["error"]["type"], "rate_limit_error");
}

// The X-Session-Id header load balancers route on must name the body's session_id.
TEST_F(HttpApiTest, SessionRoutingHeaderMustNameTheBodysSession) {
  Ready();
  tcp::socket socket = Connect();
  Reply reply =
      Send(socket, bhttp::verb::post, "/v1/completions",
           R"({"prompt": "abc", "session_id": "conv-1"})", "", {{"X-Session-Id", "conv-2"}});
  EXPECT_EQ(reply.status, 400);
  Json error = Json::parse(reply.body)["error"];
  EXPECT_EQ(error["param"], "session_id");
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("differs from session_id"));
  reply = Send(socket, bhttp::verb::post, "/v1/chat/completions",
               R"({"messages": [{"role": "user", "content": "hi"}]})", "",
               {{"X-Session-Id", "conv-1"}});
  EXPECT_EQ(reply.status, 400);
  EXPECT_THAT(Json::parse(reply.body)["error"]["message"].get<std::string>(),
              HasSubstr("has no session_id"));

  std::thread engine = Engine(FinishReason::kEos);
  reply = Send(socket, bhttp::verb::post, "/v1/completions",
               R"({"prompt": "abc", "session_id": "conv-1"})", "", {{"X-Session-Id", "conv-1"}});
  engine.join();
  EXPECT_EQ(reply.status, 200) << reply.body;
}

TEST_F(HttpApiTest, ModelsListTheServedModel) {
  Ready();
  const Json list = Json::parse(Get("/v1/models").body);
  EXPECT_EQ(list["object"], "list");
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["data"][0]["id"], "tiny");
  EXPECT_EQ(list["data"][0]["context_length"], 64);
  EXPECT_EQ(Get("/v1/models/tiny").status, 200);
  EXPECT_EQ(Get("/v1/models/other").status, 404);
}

TEST_F(HttpApiTest, TokenizeAndDetokenizeSpeakTheGrpcMessagesAsJson) {
  EXPECT_EQ(Post("/tokenize", R"({"text": "hi"})").status, 503) << "before the model is loaded";
  Ready();
  const Reply tokens = Post("/tokenize", R"({"text": "hi", "add_bos": false})");
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  EXPECT_EQ(tokens.content_type, "application/json");
  const Json parsed = Json::parse(tokens.body);
  EXPECT_EQ(parsed["ids"], Json::array({'h' + 3, 'i' + 3}));
  EXPECT_EQ(parsed["tokens"], Json::array({"h", "i"}));
  // lowerCamelCase as protobuf's JSON mapping allows; unset, BOS is what the model says.
  EXPECT_EQ(Json::parse(Post("/tokenize", R"({"text": "", "addBos": false})").body)["ids"],
            Json::array());
  backend_.validation.add_bos = true;
  EXPECT_EQ(Json::parse(Post("/tokenize", R"({"text": ""})").body)["ids"], Json::array({1}));
  const Reply text = Post("/detokenize", R"({"ids": [107, 108]})");
  ASSERT_EQ(text.status, 200) << text.body;
  EXPECT_EQ(Json::parse(text.body)["text"], "hi");

  const Reply unknown = Post("/tokenize", R"({"prompt": "hi"})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_THAT(unknown.body, HasSubstr("prompt"));
  const Reply wrong_type = Post("/detokenize", R"({"ids": [1.5]})");
  EXPECT_EQ(wrong_type.status, 400);
  const Reply out_of_range = Post("/detokenize", R"({"ids": [5000]})");
  EXPECT_EQ(out_of_range.status, 400);
  EXPECT_THAT(Json::parse(out_of_range.body)["error"]["message"].get<std::string>(),
              HasSubstr("5000"));
  EXPECT_EQ(Get("/tokenize").status, 405);
}

TEST_F(HttpApiTest, KeepAliveServesRequestsInTurn) {
  Ready();
  tcp::socket socket = Connect();
  for (int i = 0; i < 3; ++i) {
    std::thread engine = Engine(FinishReason::kEos);
    const Reply reply = Send(socket, bhttp::verb::post, "/v1/completions", R"({"prompt": "a"})");
    engine.join();
    EXPECT_EQ(reply.status, 200) << reply.body;
  }
}

// A client that goes away mid-stream is seen at once (not at the next write): the sink closes,
// so the scheduler frees the slot at its next step, and the request is counted CANCELLED.
TEST_F(HttpApiTest, DisconnectMidStreamClosesTheSink) {
  Ready();
  tcp::socket socket = Connect();
  bhttp::request<bhttp::string_body> request{bhttp::verb::post, "/v1/completions", 11};
  request.set(bhttp::field::host, "localhost");
  request.body() = R"({"prompt": "abc", "stream": true})";
  request.prepare_payload();
  bhttp::write(socket, request);
  testing::FakeScheduler::Submitted submitted;
  ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
  TokenEvent token;
  token.text = "h";
  token.token_ids = {'h' + 3};
  ASSERT_TRUE(submitted.sink->Push(token));
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  bhttp::read_header(socket, buffer, parser);
  EXPECT_EQ(parser.get().result_int(), 200u);
  EXPECT_FALSE(submitted.sink->IsClosed());

  socket.close();
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (!submitted.sink->IsClosed() && absl::Now() < deadline)
    absl::SleepFor(absl::Milliseconds(1));
  EXPECT_TRUE(submitted.sink->IsClosed());
  EXPECT_FALSE(submitted.sink->Push(token));
  scheduler_.MarkDone();
  const std::vector<RequestRecord> records = observer_.WaitFor(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].code, absl::StatusCode::kCancelled);
}

TEST_F(HttpApiTest, EngineErrorMidStreamBecomesAnErrorEvent) {
  Ready();
  std::thread engine([this] {
    testing::FakeScheduler::Submitted submitted;
    ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
    TokenEvent token;
    token.text = "h";
    token.token_ids = {'h' + 3};
    submitted.sink->Push(token);
    submitted.sink->Push(ErrorEvent{absl::UnavailableError("the server is shutting down")});
    scheduler_.MarkDone();
  });
  const Reply reply = Post("/v1/completions", R"({"prompt": "abc", "stream": true})");
  engine.join();
  EXPECT_EQ(reply.status, 200);
  EXPECT_THAT(reply.body, HasSubstr(R"(data: {"error":{"message":"the server is shutting down")"));
  EXPECT_THAT(reply.body, ::testing::Not(HasSubstr("[DONE]")));
}

TEST_F(HttpApiTest, MalformedHttpIsA400AndOversizedHeadersA431) {
  Ready();
  tcp::socket socket = Connect();
  const std::string garbage = "NOT HTTP AT ALL\r\n\r\n";
  net::write(socket, net::buffer(garbage));
  beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> response;
  bhttp::read(socket, buffer, response);
  EXPECT_EQ(response.result_int(), 400u);
  EXPECT_THAT(response.body(), HasSubstr("malformed HTTP request"));

  tcp::socket second = Connect();
  const std::string huge = "GET /health HTTP/1.1\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n";
  boost::system::error_code ignored;
  net::write(second, net::buffer(huge), ignored);
  beast::flat_buffer buffer2;
  bhttp::response<bhttp::string_body> response2;
  bhttp::read(second, buffer2, response2);
  EXPECT_EQ(response2.result_int(), 431u);
}

class HttpApiAuthTest : public HttpApiTest {
 protected:
  HttpApiAuthTest() : HttpApiTest("alice key-of-alice-0001\nbob key-of-bob-00000002\n") {}
};

TEST_F(HttpApiAuthTest, KeysAreRequiredAndSessionsBelongToTheirPrincipal) {
  Ready();
  EXPECT_EQ(Get("/health").status, 200) << "probes need no key";
  tcp::socket socket = Connect();
  Reply reply = Send(socket, bhttp::verb::get, "/v1/models");
  EXPECT_EQ(reply.status, 401);
  EXPECT_EQ(reply.www_authenticate, "Bearer");
  const Json error = Json::parse(reply.body)["error"];
  EXPECT_EQ(error["type"], "authentication_error");
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("missing API key"));
  reply = Send(socket, bhttp::verb::post, "/v1/completions", R"({"prompt": "a"})",
               "Bearer key-of-alice-0002");
  EXPECT_EQ(reply.status, 401);
  EXPECT_EQ(Json::parse(reply.body)["error"]["message"], "invalid API key");
  EXPECT_EQ(Send(socket, bhttp::verb::get, "/v1/models", "", "Bearer key-of-bob-00000002").status,
            200);

  for (const auto& [key, principal] :
       {std::pair{"key-of-alice-0001", "alice"}, std::pair{"key-of-bob-00000002", "bob"}}) {
    std::thread engine([this, principal = std::string(principal)] {
      testing::FakeScheduler::Submitted submitted;
      ASSERT_TRUE(scheduler_.TakeSubmitted(submitted));
      EXPECT_EQ(submitted.request.principal, principal);
      EXPECT_EQ(submitted.request.session_id, principal + "/conv");
      FinishedEvent finished;
      finished.reason = FinishReason::kLength;
      submitted.sink->Push(finished);
      scheduler_.MarkDone();
    });
    reply = Send(socket, bhttp::verb::post, "/v1/completions",
                 R"({"prompt": "a", "session_id": "conv"})", std::string("Bearer ") + key);
    engine.join();
    EXPECT_EQ(reply.status, 200) << reply.body;
  }
}

TEST_F(HttpApiTest, ResponsesAreStoredContinuedAndDeleted) {
  UseChatTemplate();
  Ready();
  std::thread engine = Engine(FinishReason::kStopToken);
  Reply reply = Post("/v1/responses", R"({"input": "abc", "instructions": "sys"})");
  engine.join();
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(last_prompt_text_, "<system>sys\n<user>abc\n");
  const Json first = Json::parse(reply.body);
  const std::string id = first["id"];
  EXPECT_EQ(first["object"], "response");
  EXPECT_EQ(first["status"], "completed");
  EXPECT_EQ(first["output"][0]["content"][0]["text"], "hi");
  EXPECT_EQ(first["usage"]["input_tokens"], 5);
  EXPECT_EQ(first["usage"]["input_tokens_details"]["cached_tokens"], 3);

  // Stored as returned.
  reply = Get("/v1/responses/" + id);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(Json::parse(reply.body), first);

  // A continuation renders the stored conversation (not the old instructions) and the reply.
  engine = Engine(FinishReason::kStopToken);
  reply = Post("/v1/responses",
               absl::StrCat(R"({"input": "more", "previous_response_id": ")", id, R"("})"));
  engine.join();
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(last_prompt_text_, "<user>abc\n<assistant>hi\n<user>more\n");
  EXPECT_EQ(Json::parse(reply.body)["previous_response_id"], id);

  // Deleted: gone for GET and for continuations; other methods are refused.
  tcp::socket socket = Connect();
  reply = Send(socket, bhttp::verb::put, "/v1/responses/" + id);
  EXPECT_EQ(reply.status, 405);
  reply = Send(socket, bhttp::verb::delete_, "/v1/responses/" + id);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(Json::parse(reply.body)["deleted"], true);
  EXPECT_EQ(Get("/v1/responses/" + id).status, 404);
  EXPECT_EQ(Send(socket, bhttp::verb::delete_, "/v1/responses/" + id).status, 404);
  reply = Post("/v1/responses",
               absl::StrCat(R"({"input": "x", "previous_response_id": ")", id, R"("})"));
  EXPECT_EQ(reply.status, 404);
  EXPECT_EQ(Json::parse(reply.body)["error"]["param"], "previous_response_id");

  // store: false keeps nothing.
  engine = Engine(FinishReason::kStopToken);
  reply = Post("/v1/responses", R"({"input": "abc", "store": false})");
  engine.join();
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(Get("/v1/responses/" + Json::parse(reply.body)["id"].get<std::string>()).status, 404);
}

TEST_F(HttpApiAuthTest, StoredResponsesBelongToTheirPrincipal) {
  UseChatTemplate();
  Ready();
  tcp::socket socket = Connect();
  std::thread engine = Engine(FinishReason::kStopToken);
  Reply reply = Send(socket, bhttp::verb::post, "/v1/responses", R"({"input": "a"})",
                     "Bearer key-of-alice-0001");
  engine.join();
  ASSERT_EQ(reply.status, 200) << reply.body;
  const std::string id = Json::parse(reply.body)["id"];
  const std::string path = "/v1/responses/" + id;
  EXPECT_EQ(Send(socket, bhttp::verb::get, path, "", "Bearer key-of-alice-0001").status, 200);
  EXPECT_EQ(Send(socket, bhttp::verb::get, path, "", "Bearer key-of-bob-00000002").status, 404);
  EXPECT_EQ(Send(socket, bhttp::verb::delete_, path, "", "Bearer key-of-bob-00000002").status, 404);
  reply = Send(socket, bhttp::verb::post, "/v1/responses",
               absl::StrCat(R"({"input": "x", "previous_response_id": ")", id, R"("})"),
               "Bearer key-of-bob-00000002");
  EXPECT_EQ(reply.status, 404);
  EXPECT_EQ(Send(socket, bhttp::verb::get, path, "", "Bearer key-of-alice-0001").status, 200);
}

}  // namespace
}  // namespace textgen::server::http
