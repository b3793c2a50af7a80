#include "server/transport/http_server.h"

#include <openssl/ssl.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/ssl/context.hpp"
#include "boost/asio/strand.hpp"
#include "model/base/status_macros.h"
#include "server/transport/http_connection.h"

namespace textgen::server::http {

const std::string* HttpRequest::Header(absl::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using transport::Connection;
using transport::ConnectionHost;
using transport::ConnectionRegistry;
using transport::StartConnection;
using transport::TlsStream;

// "HOST:PORT" or "[V6]:PORT" -> (host, port).
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(absl::string_view address) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", address, "' is not HOST:PORT (port 0..65535)"));
  }
  std::string host(address.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  return std::pair{host, port};
}

// The listener: accepts connections on its I/O threads and hands each to a Connection.
class ServerImpl final : public HttpServer, public ConnectionHost {
 public:
  ServerImpl(const HttpServerOptions& options, HttpHandler handler, ErrorBody transport_error)
      : options_(options),
        handler_(std::move(handler)),
        transport_error_(std::move(transport_error)),
        work_(net::make_work_guard(io_)),
        acceptor_(net::make_strand(io_)) {}
  ~ServerImpl() override { Stop(); }

  // The TLS context, when options ask for TLS. INVALID_ARGUMENT when OpenSSL refuses the PEMs.
  absl::Status ConfigureTls() {
    if (!options_.tls.has_value()) return absl::OkStatus();
    const tls::TlsCredentials& pems = *options_.tls;
    tls_context_.emplace(net::ssl::context::tls_server);
    net::ssl::context& context = *tls_context_;
    error_code ec;
    // TLS 1.2 and 1.3 only; no renegotiation (a client could make the server redo handshakes).
    context.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                            net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                            net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use,
                        ec);
    SSL_CTX_set_options(context.native_handle(), SSL_OP_NO_RENEGOTIATION);
    if (!ec) context.use_certificate_chain(net::buffer(pems.cert_chain_pem), ec);
    if (!ec) context.use_private_key(net::buffer(pems.private_key_pem), net::ssl::context::pem, ec);
    if (!ec && pems.mutual()) {
      context.add_certificate_authority(net::buffer(pems.client_ca_pem), ec);
      context.set_verify_mode(net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert, ec);
    }
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TLS for ", options_.listen, ": OpenSSL refused the credentials: ", ec.message()));
    }
    return absl::OkStatus();
  }

  absl::Status Bind() {
    absl::StatusOr<std::pair<std::string, int>> host_port = SplitHostPort(options_.listen);
    if (!host_port.ok()) return host_port.status();
    error_code ec;
    tcp::resolver resolver(io_);
    const auto results =
        resolver.resolve(host_port->first, std::to_string(host_port->second),
                         tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || results.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot resolve host '", host_port->first, "': ", ec.message()));
    }
    const tcp::endpoint endpoint = results.begin()->endpoint();
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", options_.listen, ": ", ec.message()));
    }
    port_ = acceptor_.local_endpoint().port();
    return absl::OkStatus();
  }

  void StartThreads() {
    Accept();
    for (int i = 0; i < std::max(1, options_.threads); ++i) {
      threads_.emplace_back([this] { io_.run(); });
    }
  }

  int port() const override { return port_; }

  bool Drain(absl::Duration grace) override {
    if (stopped_) return true;
    draining_ = true;
    CloseAcceptor();
    for (const auto& c : OpenConnections()) c->CloseWhenIdle();
    const absl::Time deadline = absl::Now() + grace;
    while (absl::Now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(registry_->mu);
        if (registry_->connections.empty()) return true;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  }

  void Stop() override {
    if (stopped_.exchange(true)) return;
    CloseAcceptor();
    for (const auto& c : OpenConnections()) c->CloseFromAnyThread();
    work_.reset();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  const HttpServerOptions& options() const override { return options_; }
  const HttpHandler& handler() const override { return handler_; }
  HttpResponse TransportErrorResponse(int status, absl::string_view message) const override {
    return transport_error_(status, message);
  }
  bool stopping() const override { return stopped_.load() || draining_.load(); }
  const std::shared_ptr<ConnectionRegistry>& registry() const override { return registry_; }

 private:
  void CloseAcceptor() {
    net::post(acceptor_.get_executor(), [this] {
      error_code ignored;
      acceptor_.close(ignored);
    });
  }
  std::vector<std::shared_ptr<Connection>> OpenConnections() {
    std::vector<std::shared_ptr<Connection>> open;
    std::lock_guard<std::mutex> lock(registry_->mu);
    for (Connection* c : registry_->connections) {
      if (auto alive = c->weak_from_this().lock()) open.push_back(std::move(alive));
    }
    return open;
  }

  void Accept() {
    acceptor_.async_accept(net::make_strand(io_), [this](const error_code& ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      if (!ec) {
        error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);  // SSE deltas are small writes
        if (!AtConnectionLimit()) {
          if (tls_context_.has_value()) {
            StartConnection(TlsStream(beast::tcp_stream(std::move(socket)), *tls_context_), this);
          } else {
            StartConnection(beast::tcp_stream(std::move(socket)), this);
          }
        }
        // Beyond --http-max-connections the socket closes here: a client is told at once
        // (connection reset) instead of waiting on a server that cannot take it.
      }
      // On an accept error (out of file descriptors) keep accepting: the next attempt
      // may succeed once connections close.
      Accept();
    });
  }

  bool AtConnectionLimit() {
    if (options_.max_connections <= 0) return false;
    std::lock_guard<std::mutex> lock(registry_->mu);
    return registry_->connections.size() >= static_cast<size_t>(options_.max_connections);
  }

  const HttpServerOptions options_;
  const HttpHandler handler_;
  const ErrorBody transport_error_;
  net::io_context io_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  tcp::acceptor acceptor_;
  std::optional<net::ssl::context> tls_context_;
  int port_ = 0;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> draining_{false};
  const std::shared_ptr<ConnectionRegistry> registry_ = std::make_shared<ConnectionRegistry>();
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              HttpHandler handler,
                                                              ErrorBody transport_error) {
  auto server =
      std::make_unique<ServerImpl>(options, std::move(handler), std::move(transport_error));
  TEXTGEN_RETURN_IF_ERROR(server->ConfigureTls());
  TEXTGEN_RETURN_IF_ERROR(server->Bind());
  server->StartThreads();
  return server;
}

}  // namespace textgen::server::http
