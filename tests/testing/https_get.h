#pragma once

#include <string>

#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"
#include "tests/testing/test_pki.h"

namespace textgen::server::testing {

struct HttpsResult {
  std::string error;  // why the handshake or the exchange failed; empty on success
  int status = 0;     // HTTP status
  std::string body;
};

// `method` https://localhost:<port><path> with a JSON `body` (if not empty), trusting `ca_cert`,
// presenting `client` if given. A real TLS client (hostname checked), so a test sees what a
// client would.
inline HttpsResult HttpsRequest(const std::string& method, int port, const std::string& path,
                                const std::string& body, const std::string& ca_cert,
                                const textgen::test_support::PemPair* client = nullptr) {
  namespace net = boost::asio;
  namespace bhttp = boost::beast::http;
  HttpsResult result;
  net::io_context io;
  net::ssl::context context(net::ssl::context::tls_client);
  boost::system::error_code ec;
  context.add_certificate_authority(net::buffer(ca_cert), ec);
  if (client != nullptr) {
    context.use_certificate_chain(net::buffer(client->cert), ec);
    context.use_private_key(net::buffer(client->key), net::ssl::context::pem, ec);
  }
  context.set_verify_mode(net::ssl::verify_peer);
  context.set_verify_callback(net::ssl::host_name_verification("localhost"));
  net::ssl::stream<net::ip::tcp::socket> stream(io, context);
  stream.lowest_layer().connect({net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)},
                                ec);
  if (!ec) stream.handshake(net::ssl::stream_base::client, ec);
  bhttp::request<bhttp::string_body> request{bhttp::string_to_verb(method), path, 11};
  request.set(bhttp::field::host, "localhost");
  if (!body.empty()) request.set(bhttp::field::content_type, "application/json");
  request.body() = body;
  request.prepare_payload();
  request.keep_alive(false);
  if (!ec) bhttp::write(stream, request, ec);
  boost::beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> response;
  if (!ec) bhttp::read(stream, buffer, response, ec);
  if (ec) {
    result.error = ec.message();
    return result;
  }
  result.status = static_cast<int>(response.result_int());
  result.body = response.body();
  return result;
}

inline HttpsResult HttpsGet(int port, const std::string& path, const std::string& ca_cert,
                            const textgen::test_support::PemPair* client = nullptr) {
  return HttpsRequest("GET", port, path, "", ca_cert, client);
}

}  // namespace textgen::server::testing
