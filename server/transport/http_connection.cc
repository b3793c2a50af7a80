#include "server/transport/http_connection.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <deque>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "boost/asio/bind_executor.hpp"
#include "boost/asio/dispatch.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"

namespace textgen::server::http::transport {
namespace {

constexpr absl::string_view kServerHeader = "textgen";

std::chrono::nanoseconds ToChrono(absl::Duration d) { return absl::ToChronoNanoseconds(d); }

// Reads requests one after another from a `Stream` (beast::tcp_stream or TlsStream) and answers
// each through the exchange the handler gets.
template <class Stream>
class StreamConnection final : public Connection {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  StreamConnection(Stream stream, const ConnectionHost* server);
  ~StreamConnection() override;

  void Run() override;
  void CloseFromAnyThread() override;
  void CloseWhenIdle() override;
  net::any_io_executor executor() override { return stream_.get_executor(); }

  bool IsCurrent(uint64_t id) const override {
    return exchange_active_ && id == exchange_id_ && !closed_;
  }
  void Respond(uint64_t id, HttpResponse response) override;
  void StartStream(uint64_t id, int status, const std::string& content_type) override;
  void Write(uint64_t id, std::string data) override;
  void EndStream(uint64_t id) override;
  size_t unsent_bytes(uint64_t id) const override { return IsCurrent(id) ? unsent_bytes_ : 0; }
  void SetOnClose(uint64_t id, std::function<void()> on_close) override;

 private:
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }
  std::shared_ptr<StreamConnection> shared() {
    return std::static_pointer_cast<StreamConnection>(shared_from_this());
  }
  void OnHandshake(const error_code& ec);
  void ReadHeader();
  void OnHeader(const error_code& ec);
  void ReadBody();
  void OnBody(const error_code& ec);
  void Dispatch();
  void WatchForClose();
  void OnReadable(const error_code& ec, uint64_t id);
  void TransportError(int status, absl::string_view message);
  void Send(std::string bytes);
  void WriteNext();
  void OnWritten(const error_code& ec);
  void FinishExchange();
  void LingerThenClose();
  void DiscardUntilClosed();
  void CloseNow();

  const ConnectionHost* const server_;
  const std::shared_ptr<ConnectionRegistry> registry_;
  Stream stream_;
  net::steady_timer watch_timer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::string peer_;
  std::string client_subject_;  // of a verified client certificate (mutual TLS)

  uint64_t exchange_id_ = 0;
  bool exchange_active_ = false;
  bool response_started_ = false;
  bool ending_ = false;  // the last bytes of the response are queued
  bool chunked_ = false;
  bool keep_alive_ = false;
  unsigned version_ = 11;
  bool closed_ = false;
  bool lingering_ = false;
  std::function<void()> on_close_;
  // Held while a handler owes a response, so the connection outlives the wait for tokens.
  std::shared_ptr<Connection> self_;

  std::deque<std::string> queued_;
  std::string in_flight_;
  size_t unsent_bytes_ = 0;
  bool writing_ = false;
};

// What a handler holds: a connection and which of its requests it answers. Calls for an
// exchange that is over (or a connection that is gone) do nothing.
class Exchange final : public HttpExchange {
 public:
  Exchange(std::weak_ptr<Connection> connection, uint64_t id)
      : connection_(std::move(connection)), id_(id) {}

  void Respond(HttpResponse response) override {
    if (auto c = connection_.lock()) c->Respond(id_, std::move(response));
  }
  void StartStream(int status, const std::string& content_type) override {
    if (auto c = connection_.lock()) c->StartStream(id_, status, content_type);
  }
  void Write(std::string data) override {
    if (auto c = connection_.lock()) c->Write(id_, std::move(data));
  }
  void EndStream() override {
    if (auto c = connection_.lock()) c->EndStream(id_);
  }
  size_t unsent_bytes() const override {
    auto c = connection_.lock();
    return c ? c->unsent_bytes(id_) : 0;
  }
  bool closed() const override {
    auto c = connection_.lock();
    return c == nullptr || !c->IsCurrent(id_);
  }
  void SetOnClose(std::function<void()> on_close) override {
    if (auto c = connection_.lock()) c->SetOnClose(id_, std::move(on_close));
  }
  void Post(std::function<void()> task) override {
    if (auto c = connection_.lock()) {
      net::post(c->executor(), [c, task = std::move(task)] { task(); });
    }
  }

 private:
  const std::weak_ptr<Connection> connection_;
  const uint64_t id_;
};

template <class Stream>
StreamConnection<Stream>::StreamConnection(Stream stream, const ConnectionHost* server)
    : server_(server),
      registry_(server->registry()),
      stream_(std::move(stream)),
      watch_timer_(stream_.get_executor()) {
  error_code ec;
  const tcp::endpoint remote = tcp().socket().remote_endpoint(ec);
  if (!ec) peer_ = absl::StrCat(remote.address().to_string(), ":", remote.port());
  std::lock_guard<std::mutex> lock(registry_->mu);
  registry_->connections.insert(this);
}

template <class Stream>
StreamConnection<Stream>::~StreamConnection() {
  std::lock_guard<std::mutex> lock(registry_->mu);
  registry_->connections.erase(this);
}

template <class Stream>
void StreamConnection<Stream>::Run() {
  net::dispatch(stream_.get_executor(), [self = shared()] {
    if constexpr (kTls) {
      // The handshake has the read timeout: a client that connects and says nothing is dropped.
      self->tcp().expires_after(ToChrono(self->server_->options().read_timeout));
      self->stream_.async_handshake(net::ssl::stream_base::server,
                                    [self](const error_code& ec) { self->OnHandshake(ec); });
    } else {
      self->ReadHeader();
    }
  });
}

// RFC 2253 text of the subject ("CN=alice,O=Example"), the form gRPC reports as x509_subject,
// so a client certificate names the same principal on both front ends.
std::string SubjectText(X509* certificate) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "";
  X509_NAME_print_ex(bio, X509_get_subject_name(certificate), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<size_t>(std::max(0L, size)));
  BIO_free(bio);
  return text;
}

template <class Stream>
void StreamConnection<Stream>::OnHandshake(const error_code& ec) {
  if constexpr (kTls) {
    // A failed handshake (wrong protocol, no or untrusted client certificate) just closes:
    // there is no HTTP to answer in.
    if (ec) return CloseNow();
    SSL* ssl = stream_.native_handle();
    if (X509* peer = SSL_get0_peer_certificate(ssl);
        peer != nullptr && SSL_get_verify_result(ssl) == X509_V_OK) {
      client_subject_ = SubjectText(peer);
    }
    ReadHeader();
  }
}

template <class Stream>
void StreamConnection<Stream>::CloseFromAnyThread() {
  net::post(stream_.get_executor(), [self = shared()] { self->CloseNow(); });
}

template <class Stream>
void StreamConnection<Stream>::CloseWhenIdle() {
  net::post(stream_.get_executor(), [self = shared()] {
    if (!self->exchange_active_) self->CloseNow();
  });
}

template <class Stream>
void StreamConnection<Stream>::ReadHeader() {
  if (closed_ || server_->stopping()) return CloseNow();
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(server_->options().max_header_bytes));
  parser_->body_limit(server_->options().max_body_bytes);
  tcp().expires_after(ToChrono(server_->options().idle_timeout));
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           [self = shared()](const error_code& ec, size_t) { self->OnHeader(ec); });
}

template <class Stream>
void StreamConnection<Stream>::OnHeader(const error_code& ec) {
  if (ec == bhttp::error::header_limit) {
    return TransportError(431, absl::StrCat("request headers exceed ",
                                            server_->options().max_header_bytes, " bytes"));
  }
  if (ec == bhttp::error::body_limit) {
    return TransportError(
        413, absl::StrCat("request body exceeds ", server_->options().max_body_bytes, " bytes"));
  }
  if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
      ec == net::error::operation_aborted || ec == net::error::connection_reset ||
      ec == net::error::eof) {
    return CloseNow();
  }
  if (ec) return TransportError(400, absl::StrCat("malformed HTTP request: ", ec.message()));
  // The body limit on Content-Length before any of it is read.
  if (const auto length = parser_->content_length();
      length && *length > server_->options().max_body_bytes) {
    return TransportError(413, absl::StrCat("request body is ", *length, " bytes; at most ",
                                            server_->options().max_body_bytes, " are accepted"));
  }
  const auto& header = parser_->get();
  const auto expect = header.find(bhttp::field::expect);
  if (expect != header.end() && beast::iequals(expect->value(), "100-continue") &&
      !parser_->is_done()) {
    static constexpr absl::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    tcp().expires_after(ToChrono(server_->options().write_timeout));
    net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                     [self = shared()](const error_code& write_ec, size_t) {
                       if (write_ec) return self->CloseNow();
                       self->ReadBody();
                     });
    return;
  }
  ReadBody();
}

template <class Stream>
void StreamConnection<Stream>::ReadBody() {
  if (parser_->is_done()) return Dispatch();
  tcp().expires_after(ToChrono(server_->options().read_timeout));
  bhttp::async_read(stream_, buffer_, *parser_,
                    [self = shared()](const error_code& ec, size_t) { self->OnBody(ec); });
}

template <class Stream>
void StreamConnection<Stream>::OnBody(const error_code& ec) {
  if (ec == bhttp::error::body_limit) {
    return TransportError(
        413, absl::StrCat("request body exceeds ", server_->options().max_body_bytes, " bytes"));
  }
  if (ec == beast::error::timeout) {
    return TransportError(408, "the request body was not received in time");
  }
  if (ec) return CloseNow();
  Dispatch();
}

template <class Stream>
void StreamConnection<Stream>::Dispatch() {
  tcp().expires_never();
  bhttp::request<bhttp::string_body> message = parser_->release();
  parser_.reset();
  HttpRequest request;
  request.method = std::string(message.method_string());
  const absl::string_view target(message.target().data(), message.target().size());
  request.path = std::string(target.substr(0, target.find('?')));
  for (const auto& field : message) {
    request.headers.emplace_back(absl::AsciiStrToLower(absl::string_view(
                                     field.name_string().data(), field.name_string().size())),
                                 std::string(field.value()));
  }
  request.body = std::move(message.body());
  request.peer = peer_;
  request.client_certificate_subject = client_subject_;

  ++exchange_id_;
  exchange_active_ = true;
  response_started_ = false;
  ending_ = false;
  chunked_ = false;
  keep_alive_ = message.keep_alive();
  version_ = message.version();
  on_close_ = nullptr;
  self_ = shared_from_this();
  WatchForClose();
  auto exchange = std::make_shared<Exchange>(weak_from_this(), exchange_id_);
  try {
    server_->handler()(request, exchange);
  } catch (const std::exception& e) {
    // Handlers report errors as responses; this is a bug, answered rather than crashing.
    if (IsCurrent(exchange_id_) && !response_started_) {
      Respond(exchange_id_,
              server_->TransportErrorResponse(500, absl::StrCat("internal error: ", e.what())));
    }
  }
}

// While a response is pending the client sends nothing (no pipelining in practice), so the
// socket turning readable means it closed (or, rarely, pipelined its next request).
template <class Stream>
void StreamConnection<Stream>::WatchForClose() {
  tcp().socket().async_wait(
      tcp::socket::wait_read,
      [self = shared(), id = exchange_id_](const error_code& ec) { self->OnReadable(ec, id); });
}

template <class Stream>
void StreamConnection<Stream>::OnReadable(const error_code& ec, uint64_t id) {
  if (!IsCurrent(id) || ec == net::error::operation_aborted) return;
  if (ec) return CloseNow();
  // POLLRDHUP: the client shut its side, even with bytes still unread before the FIN (a TLS
  // close_notify record, a request it pipelined before leaving).
  pollfd poll_fd{tcp().socket().native_handle(), POLLIN | POLLRDHUP, 0};
  if (::poll(&poll_fd, 1, 0) < 0) return WatchForClose();
  if ((poll_fd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) return CloseNow();
  if ((poll_fd.revents & POLLIN) == 0) return WatchForClose();
  // Bytes but no FIN: a pipelined request (read after this response) or a TLS record. The socket
  // stays readable, so look again a little later rather than spin.
  watch_timer_.expires_after(std::chrono::milliseconds(100));
  watch_timer_.async_wait([self = shared(), id](const error_code& timer_ec) {
    if (timer_ec || !self->IsCurrent(id)) return;
    self->OnReadable({}, id);
  });
}

template <class Stream>
void StreamConnection<Stream>::SetOnClose(uint64_t id, std::function<void()> on_close) {
  if (IsCurrent(id)) on_close_ = std::move(on_close);
}

template <class Stream>
void StreamConnection<Stream>::TransportError(int status, absl::string_view message) {
  // Nothing more is read from a connection whose request was not understood (or whose body
  // was not read): answer and close.
  parser_.reset();
  ++exchange_id_;
  exchange_active_ = true;
  response_started_ = false;
  ending_ = false;
  keep_alive_ = false;
  version_ = 11;
  self_ = shared_from_this();
  Respond(exchange_id_, server_->TransportErrorResponse(status, message));
}

template <class Stream>
void StreamConnection<Stream>::Respond(uint64_t id, HttpResponse response) {
  if (!IsCurrent(id) || response_started_) return;
  response_started_ = true;
  bhttp::response<bhttp::string_body> message{static_cast<bhttp::status>(response.status),
                                              version_};
  message.set(bhttp::field::server, std::string(kServerHeader));
  message.set(bhttp::field::content_type, response.content_type);
  for (const auto& [name, value] : response.headers) message.set(name, value);
  message.keep_alive(keep_alive_);
  message.body() = std::move(response.body);
  message.prepare_payload();
  std::ostringstream out;
  out << message;
  ending_ = true;
  Send(std::move(out).str());
}

template <class Stream>
void StreamConnection<Stream>::StartStream(uint64_t id, int status,
                                           const std::string& content_type) {
  if (!IsCurrent(id) || response_started_) return;
  response_started_ = true;
  bhttp::response<bhttp::empty_body> message{static_cast<bhttp::status>(status), version_};
  message.set(bhttp::field::server, std::string(kServerHeader));
  message.set(bhttp::field::content_type, content_type);
  message.set(bhttp::field::cache_control, "no-cache");
  // HTTP/1.0 has no chunked encoding: the stream ends when the connection closes.
  chunked_ = version_ >= 11;
  if (!chunked_) keep_alive_ = false;
  message.keep_alive(keep_alive_);
  if (chunked_) message.chunked(true);
  std::ostringstream out;
  out << message.base();
  Send(std::move(out).str());
}

template <class Stream>
void StreamConnection<Stream>::Write(uint64_t id, std::string data) {
  if (!IsCurrent(id) || !response_started_ || ending_ || data.empty()) return;
  if (chunked_) {
    data = absl::StrCat(absl::Hex(data.size()), "\r\n", data, "\r\n");
  }
  Send(std::move(data));
}

template <class Stream>
void StreamConnection<Stream>::EndStream(uint64_t id) {
  if (!IsCurrent(id) || !response_started_ || ending_) return;
  ending_ = true;
  if (chunked_) {
    Send("0\r\n\r\n");
  } else {
    WriteNext();  // nothing to add: finishes once the queue drains
  }
}

template <class Stream>
void StreamConnection<Stream>::Send(std::string bytes) {
  unsent_bytes_ += bytes.size();
  queued_.push_back(std::move(bytes));
  WriteNext();
}

template <class Stream>
void StreamConnection<Stream>::WriteNext() {
  if (writing_ || closed_) return;
  if (queued_.empty()) {
    if (ending_ && exchange_active_) FinishExchange();
    return;
  }
  in_flight_.clear();
  while (!queued_.empty()) {
    in_flight_ += queued_.front();
    queued_.pop_front();
  }
  writing_ = true;
  tcp().expires_after(ToChrono(server_->options().write_timeout));
  net::async_write(stream_, net::buffer(in_flight_),
                   [self = shared()](const error_code& ec, size_t) { self->OnWritten(ec); });
}

template <class Stream>
void StreamConnection<Stream>::OnWritten(const error_code& ec) {
  writing_ = false;
  unsent_bytes_ -= std::min(unsent_bytes_, in_flight_.size());
  in_flight_.clear();
  if (ec) return CloseNow();  // the client is gone or stopped reading (write timeout)
  tcp().expires_never();
  WriteNext();
}

template <class Stream>
void StreamConnection<Stream>::FinishExchange() {
  const std::shared_ptr<Connection> keep = shared_from_this();
  exchange_active_ = false;
  on_close_ = nullptr;
  self_.reset();
  error_code ignored;
  watch_timer_.cancel();
  tcp().socket().cancel(ignored);  // the close watcher; nothing else is pending
  if (keep_alive_ && !server_->stopping()) {
    ReadHeader();
  } else {
    LingerThenClose();
  }
}

// Closing a socket with unread input makes the kernel send RST, which can destroy the response
// before the client reads it (a 413 for a body never read). So: close_notify (TLS), FIN, then
// read and drop whatever still arrives until the client closes, for at most a couple of seconds.
template <class Stream>
void StreamConnection<Stream>::LingerThenClose() {
  if (lingering_) return;
  lingering_ = true;
  tcp().expires_after(std::chrono::seconds(2));
  if constexpr (kTls) {
    // Sends close_notify and waits for the client's (or its FIN, or the timeout).
    stream_.async_shutdown([self = shared()](const error_code&) { self->DiscardUntilClosed(); });
  } else {
    DiscardUntilClosed();
  }
}

template <class Stream>
void StreamConnection<Stream>::DiscardUntilClosed() {
  if (closed_) return;
  error_code ignored;
  tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
  auto discard = std::make_shared<std::array<char, 4096>>();
  tcp().async_read_some(net::buffer(*discard),
                        [self = shared(), discard](const error_code& ec, size_t) {
                          if (ec) return self->CloseNow();
                          self->DiscardUntilClosed();
                        });
}

template <class Stream>
void StreamConnection<Stream>::CloseNow() {
  if (closed_) return;
  const std::shared_ptr<Connection> keep = shared_from_this();
  closed_ = true;
  queued_.clear();
  std::function<void()> on_close = std::move(on_close_);
  on_close_ = nullptr;
  error_code ignored;
  watch_timer_.cancel();
  tcp().socket().close(ignored);
  if (exchange_active_ && on_close) on_close();
  self_.reset();
}

}  // namespace

void StartConnection(beast::tcp_stream stream, const ConnectionHost* host) {
  std::make_shared<StreamConnection<beast::tcp_stream>>(std::move(stream), host)->Run();
}

void StartConnection(TlsStream stream, const ConnectionHost* host) {
  std::make_shared<StreamConnection<TlsStream>>(std::move(stream), host)->Run();
}

}  // namespace textgen::server::http::transport
