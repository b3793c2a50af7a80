// The HTTP transport alone (no gRPC, no model), so it also runs under ASan and TSan: keep-alive,
// many concurrent streams fed from other threads (as the engine thread does), a client that
// disconnects mid-stream, size limits, and Stop() with connections open.
#include "server/transport/http_server.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace textgen::server::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using ::testing::HasSubstr;

HttpResponse ErrorBody(int status, absl::string_view message) {
  return HttpResponse::Json(status, absl::StrCat("{\"error\":\"", message, "\"}"));
}

// Routes: /echo answers the body back; /stream?n streams `n` chunks ("0\n", "1\n", ...) written
// from a thread of its own, one Post per chunk; /hold streams one chunk and then waits for the
// client to go away, counting on_close calls.
class HttpServerTest : public ::testing::Test {
 protected:
  HttpServerTest() {
    HttpServerOptions options;
    options.max_body_bytes = 1024;
    options.max_header_bytes = 4096;
    absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(
        options, [this](const HttpRequest& r, std::shared_ptr<HttpExchange> e) { Handle(r, e); },
        &ErrorBody);
    EXPECT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  ~HttpServerTest() override {
    server_->Stop();
    for (std::thread& t : producers_) t.join();
  }

  void Handle(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange) {
    if (request.path == "/echo") {
      HttpResponse response = HttpResponse::Json(200, request.body);
      response.content_type = "text/plain";
      return exchange->Respond(std::move(response));
    }
    if (request.path == "/stream") {
      const int n = std::stoi(request.body.empty() ? "10" : request.body);
      exchange->StartStream(200, "text/event-stream");
      std::lock_guard<std::mutex> lock(mu_);
      producers_.emplace_back([exchange, n] {
        for (int i = 0; i < n; ++i) {
          exchange->Post([exchange, i] { exchange->Write(std::to_string(i) + "\n"); });
        }
        exchange->Post([exchange] { exchange->EndStream(); });
      });
      return;
    }
    if (request.path == "/hold") {
      exchange->SetOnClose([this] {
        ++closes_;
        closed_.Notify();
      });
      Hold(exchange);  // never ended: only the client's disconnect finishes it
      exchange->StartStream(200, "text/plain");
      exchange->Write("started\n");
      return;
    }
    if (request.path == "/slow") {
      Hold(exchange);  // the test ends it
      exchange->StartStream(200, "text/plain");
      exchange->Write("a");
      return;
    }
    exchange->Respond(ErrorBody(404, "no route"));
  }

  // The handler runs on an I/O thread; bytes arriving at the client do not order its writes
  // before the test's reads, so the held exchange is handed over through a notification.
  void Hold(const std::shared_ptr<HttpExchange>& exchange) {
    held_ = exchange;
    held_ready_.Notify();
  }
  std::shared_ptr<HttpExchange> HeldExchange() {
    EXPECT_TRUE(held_ready_.WaitForNotificationWithTimeout(absl::Seconds(5)));
    return held_;
  }

  tcp::socket Connect() {
    tcp::socket socket(io_);
    socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), server_->port()));
    return socket;
  }

  static bhttp::response<bhttp::string_body> Exchange(tcp::socket& socket, const std::string& path,
                                                      const std::string& body) {
    bhttp::request<bhttp::string_body> request{bhttp::verb::post, path, 11};
    request.set(bhttp::field::host, "localhost");
    request.body() = body;
    request.prepare_payload();
    bhttp::write(socket, request);
    beast::flat_buffer buffer;
    bhttp::response<bhttp::string_body> response;
    bhttp::read(socket, buffer, response);
    return response;
  }

  net::io_context io_;
  std::unique_ptr<HttpServer> server_;
  std::mutex mu_;
  std::vector<std::thread> producers_;  // guarded by mu_ while the server runs
  std::atomic<int> closes_{0};
  absl::Notification closed_;
  absl::Notification held_ready_;
  std::shared_ptr<HttpExchange> held_;  // written once, before held_ready_ is notified
};

TEST_F(HttpServerTest, EchoOverKeepAlive) {
  tcp::socket socket = Connect();
  for (int i = 0; i < 5; ++i) {
    const auto response = Exchange(socket, "/echo", "hello " + std::to_string(i));
    EXPECT_EQ(response.result_int(), 200u);
    EXPECT_EQ(response.body(), "hello " + std::to_string(i));
    EXPECT_TRUE(response.keep_alive());
  }
}

TEST_F(HttpServerTest, ManyConcurrentStreamsFedFromOtherThreads) {
  constexpr int kClients = 16;
  constexpr int kChunks = 200;
  std::string expected;
  for (int i = 0; i < kChunks; ++i) expected += std::to_string(i) + "\n";
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      net::io_context io;
      tcp::socket socket(io);
      socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), server_->port()));
      for (int round = 0; round < 3; ++round) {
        const auto response = Exchange(socket, "/stream", std::to_string(kChunks));
        if (response.result_int() == 200 && response.body() == expected &&
            response[bhttp::field::content_type] == "text/event-stream") {
          ++ok;
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ok.load(), kClients * 3);
}

TEST_F(HttpServerTest, DisconnectIsSeenWithoutAWrite) {
  tcp::socket socket = Connect();
  bhttp::request<bhttp::string_body> request{bhttp::verb::get, "/hold", 11};
  request.set(bhttp::field::host, "localhost");
  bhttp::write(socket, request);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  bhttp::read_header(socket, buffer, parser);
  ASSERT_EQ(parser.get().result_int(), 200u);
  EXPECT_EQ(closes_.load(), 0);
  socket.close();
  ASSERT_TRUE(closed_.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(closes_.load(), 1);
  const std::shared_ptr<HttpExchange> held = HeldExchange();
  ASSERT_NE(held, nullptr);
  EXPECT_TRUE(held->closed());
  held->Write("ignored after close");  // harmless
  held->EndStream();
}

TEST_F(HttpServerTest, LimitsAreAnsweredBeforeTheBodyIsRead) {
  tcp::socket socket = Connect();
  const std::string big_header = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n";
  net::write(socket, net::buffer(big_header));  // the body never comes
  beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> response;
  bhttp::read(socket, buffer, response);
  EXPECT_EQ(response.result_int(), 413u);
  EXPECT_THAT(response.body(), HasSubstr("1024"));

  tcp::socket second = Connect();
  const std::string long_header =
      "GET /echo HTTP/1.1\r\nHost: x\r\nX-Long: " + std::string(8000, 'a') + "\r\n\r\n";
  boost::system::error_code ignored;
  net::write(second, net::buffer(long_header), ignored);
  beast::flat_buffer buffer2;
  bhttp::response<bhttp::string_body> response2;
  bhttp::read(second, buffer2, response2);
  EXPECT_EQ(response2.result_int(), 431u);
}

TEST_F(HttpServerTest, StopClosesOpenConnections) {
  tcp::socket idle = Connect();
  tcp::socket holding = Connect();
  bhttp::request<bhttp::string_body> request{bhttp::verb::get, "/hold", 11};
  request.set(bhttp::field::host, "localhost");
  bhttp::write(holding, request);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  bhttp::read_header(holding, buffer, parser);
  server_->Stop();
  EXPECT_TRUE(closed_.WaitForNotificationWithTimeout(absl::Seconds(5)));
  char byte;
  boost::system::error_code ec;
  idle.read_some(net::buffer(&byte, 1), ec);
  EXPECT_TRUE(ec) << "the idle connection is still open after Stop()";
}

// Drain: idle connections close at once; a response still being produced is sent in full
// before its connection closes.
TEST_F(HttpServerTest, DrainLetsPendingResponsesFinish) {
  tcp::socket idle = Connect();
  tcp::socket streaming = Connect();
  bhttp::request<bhttp::string_body> request{bhttp::verb::get, "/slow", 11};
  request.set(bhttp::field::host, "localhost");
  bhttp::write(streaming, request);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  bhttp::read_header(streaming, buffer, parser);
  ASSERT_EQ(parser.get().result_int(), 200u);

  bool drained = false;
  std::thread drain([&] { drained = server_->Drain(absl::Seconds(5)); });
  char byte;
  boost::system::error_code ec;
  idle.read_some(net::buffer(&byte, 1), ec);
  EXPECT_TRUE(ec) << "an idle connection stays open while draining";
  absl::SleepFor(absl::Milliseconds(100));
  const std::shared_ptr<HttpExchange> held = HeldExchange();
  ASSERT_NE(held, nullptr);
  held->Post([exchange = held] {
    exchange->Write("b");
    exchange->EndStream();
  });
  bhttp::read(streaming, buffer, parser);
  EXPECT_EQ(parser.get().body(), "ab");
  drain.join();
  EXPECT_TRUE(drained);
}

}  // namespace
}  // namespace textgen::server::http
