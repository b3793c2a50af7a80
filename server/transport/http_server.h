#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/tls/tls_credentials.h"

namespace textgen::server::http {

// One HTTP request as a route sees it: read whole (the body is size-limited before it is read).
struct HttpRequest {
  std::string method;                                        // "GET", "POST", ...
  std::string path;                                          // the target without its query string
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;
  std::string peer;  // "ip:port" of the client
  // With mutual TLS: the verified client certificate's subject in RFC 2253 form
  // ("CN=alice,O=Example", as gRPC reports it); empty otherwise.
  std::string client_certificate_subject;

  // The value of header `lower_name`, or null.
  const std::string* Header(absl::string_view lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers

  static HttpResponse Json(int status, std::string body) {
    HttpResponse response;
    response.status = status;
    response.body = std::move(body);
    return response;
  }
};

// The response side of one request. Every method but Post() must run on the exchange's
// executor: inside the handler, or in a task given to Post(). A handler answers with Respond()
// or with StartStream(), Write()s and EndStream(), at once or later from posted tasks.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  // Sends a whole response; ends the exchange.
  virtual void Respond(HttpResponse response) = 0;
  // Sends the status line and headers of a streamed (chunked) response.
  virtual void StartStream(int status, const std::string& content_type) = 0;
  // Queues bytes of a streamed response.
  virtual void Write(std::string data) = 0;
  // Ends a streamed response; ends the exchange.
  virtual void EndStream() = 0;
  // Bytes queued and not yet taken by the client's socket.
  virtual size_t unsent_bytes() const = 0;
  // True once the client went away (or the server stopped) before the response ended.
  virtual bool closed() const = 0;
  // Runs `on_close` (on the executor) once if the client goes away before the response ends:
  // the connection watches for it while the response is pending, so a disconnect is seen at
  // once, not at the next write.
  virtual void SetOnClose(std::function<void()> on_close) = 0;
  // Runs `task` on the exchange's executor. Thread-safe; the task is dropped if the connection
  // is already gone.
  virtual void Post(std::function<void()> task) = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, std::shared_ptr<HttpExchange>)>;

struct HttpServerOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT; port 0 picks a free one
  int threads = 2;                     // I/O threads (handlers only validate and enqueue)
  size_t max_body_bytes = 4 << 20;     // a bigger Content-Length gets 413 before it is read
  size_t max_header_bytes = 16 << 10;  // bigger headers get 431
  absl::Duration read_timeout = absl::Seconds(30);   // to read one request once it started
  absl::Duration idle_timeout = absl::Seconds(60);   // a keep-alive connection with no request
  absl::Duration write_timeout = absl::Seconds(60);  // a client that stops reading is dropped
  int max_connections = 0;  // open connections; beyond, new ones are closed at once. 0 = no cap
  // TLS 1.2+ with these credentials (mutual when they carry client CAs); none = plain text.
  std::optional<tls::TlsCredentials> tls;
};

// An HTTP/1.1 server on Boost.Beast (asynchronous: a few I/O threads serve any number of
// connections and streams). Transport only: routes are the handler's business. Requests on one
// connection are answered in order; errors the transport itself finds (malformed HTTP, body
// or headers too large, timeouts) are answered by `transport_error` (status, message) or by
// closing the connection.
class HttpServer {
 public:
  using ErrorBody = std::function<HttpResponse(int status, absl::string_view message)>;

  // Binds and starts serving. INVALID_ARGUMENT for a malformed address or TLS credentials
  // OpenSSL refuses, UNAVAILABLE when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           HttpHandler handler,
                                                           ErrorBody transport_error);
  virtual ~HttpServer() = default;

  virtual int port() const = 0;
  // Graceful stop: stops accepting, closes idle connections at once and every other one as
  // soon as its response is sent (a stream the engine finished may still be writing). Returns
  // true when all were closed within `grace`; call Stop() afterwards in any case.
  virtual bool Drain(absl::Duration grace) = 0;
  // Stops accepting, closes every connection (their pending exchanges see closed()) and joins
  // the I/O threads. Idempotent. Whoever still holds an HttpExchange must drop it before the
  // server is destroyed.
  virtual void Stop() = 0;
};

}  // namespace textgen::server::http
