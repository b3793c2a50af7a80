#pragma once

// Private to the HTTP transport (http_server.cc, http_connection.cc): one client connection,
// reading requests in turn and answering each through the exchange its handler gets, and what
// it needs of the listener that accepted it.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl/context.hpp"
#include "boost/beast/core/tcp_stream.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl/ssl_stream.hpp"
#include "server/transport/http_server.h"

namespace textgen::server::http::transport {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

class Connection;

// The open connections, shared by the server and each connection, so a connection that outlives
// the server object (its last handler destroyed with the io_context) can still unregister.
struct ConnectionRegistry {
  std::mutex mu;
  absl::flat_hash_set<Connection*> connections;  // guarded by mu
};

// One client connection, as the server and the exchanges see it. Implemented once per transport
// (plain TCP or TLS) by StreamConnection below; everything runs on the connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  virtual ~Connection() = default;
  virtual void Run() = 0;
  // Thread-safe: closes the connection on its strand.
  virtual void CloseFromAnyThread() = 0;
  // Thread-safe: closes the connection on its strand unless a response is pending (that one
  // closes the connection when it has been sent, as the server is stopping).
  virtual void CloseWhenIdle() = 0;
  virtual net::any_io_executor executor() = 0;

  // The exchange's operations (on the strand); `id` says which request they answer.
  virtual bool IsCurrent(uint64_t id) const = 0;
  virtual void Respond(uint64_t id, HttpResponse response) = 0;
  virtual void StartStream(uint64_t id, int status, const std::string& content_type) = 0;
  virtual void Write(uint64_t id, std::string data) = 0;
  virtual void EndStream(uint64_t id) = 0;
  virtual size_t unsent_bytes(uint64_t id) const = 0;
  virtual void SetOnClose(uint64_t id, std::function<void()> on_close) = 0;
};

// What a connection needs of the listener that accepted it (thread-safe).
class ConnectionHost {
 public:
  virtual ~ConnectionHost() = default;
  virtual const HttpServerOptions& options() const = 0;
  virtual const HttpHandler& handler() const = 0;
  virtual HttpResponse TransportErrorResponse(int status, absl::string_view message) const = 0;
  // Draining or stopped: no new request is read.
  virtual bool stopping() const = 0;
  virtual const std::shared_ptr<ConnectionRegistry>& registry() const = 0;
};

// A connection over `stream` (plain TCP or TLS) that starts reading at once; it keeps itself
// alive while it has work, and registers with `host`'s registry.
void StartConnection(beast::tcp_stream stream, const ConnectionHost* host);
void StartConnection(TlsStream stream, const ConnectionHost* host);

}  // namespace textgen::server::http::transport
