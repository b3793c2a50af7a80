#include "client/bench_http.h"

#include <chrono>
#include <functional>
#include <limits>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "nlohmann/json.hpp"

namespace textgen::client {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

grpc::StatusCode CodeForHttpStatus(unsigned status) {
  switch (status) {
    case 200:
      return grpc::StatusCode::OK;
    case 400:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case 404:
      return grpc::StatusCode::NOT_FOUND;
    case 429:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case 503:
      return grpc::StatusCode::UNAVAILABLE;
    default:
      return grpc::StatusCode::UNKNOWN;
  }
}

}  // namespace

struct HttpBenchClient::Connection {
  std::string host;
  std::string port;
  net::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  bool open = false;
};

HttpBenchClient::HttpBenchClient(const std::string& address)
    : connection_(std::make_unique<Connection>()) {
  const size_t colon = address.rfind(':');
  connection_->host = address.substr(0, colon);
  connection_->port = colon == std::string::npos ? "80" : address.substr(colon + 1);
}

HttpBenchClient::~HttpBenchClient() = default;

RequestRecord HttpBenchClient::Run(const BenchOptions& options, const std::vector<int32_t>& prompt,
                                   int max_tokens, uint64_t seed) {
  RequestRecord record;
  record.prompt_tokens = static_cast<int>(prompt.size());
  record.code = grpc::StatusCode::UNAVAILABLE;
  Connection& c = *connection_;
  nlohmann::json body = {{"prompt", prompt}, {"max_tokens", max_tokens},
                         {"seed", seed},     {"ignore_eos", true},
                         {"stream", true},   {"stream_options", {{"include_usage", true}}}};
  if (!options.json_schema.empty()) {
    body["json_schema"] = nlohmann::json::parse(options.json_schema, nullptr, false);
  }
  if (!options.regex.empty()) body["regex"] = options.regex;
  bhttp::request<bhttp::string_body> request{bhttp::verb::post, "/v1/completions", 11};
  request.set(bhttp::field::host, c.host);
  request.set(bhttp::field::content_type, "application/json");
  if (!options.api_key.empty())
    request.set(bhttp::field::authorization, "Bearer " + options.api_key);
  request.body() = body.dump();
  request.prepare_payload();

  const Clock::time_point start = Clock::now();
  Clock::time_point last = start;
  boost::system::error_code ec;
  if (!c.open) {
    tcp::resolver resolver(c.io);
    c.stream.connect(resolver.resolve(c.host, c.port, ec), ec);
    if (ec) return record;
    c.stream.socket().set_option(tcp::no_delay(true), ec);
    c.open = true;
  }
  if (options.timeout) c.stream.expires_after(absl::ToChronoNanoseconds(*options.timeout));
  bhttp::write(c.stream, request, ec);
  if (ec) {
    c.open = false;
    c.stream.close();
    return record;
  }

  // Server-sent events arrive as chunk bodies; split them into "data: ..." events.
  bhttp::response_parser<bhttp::string_body> parser;  // an error reply has a JSON body
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  std::string pending;
  int deltas_in_read = 0;
  bool done = false;
  std::function<size_t(std::uint64_t, beast::string_view, boost::system::error_code&)> on_chunk =
      [&](std::uint64_t, beast::string_view data, boost::system::error_code&) {
        pending.append(data.data(), data.size());
        for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
          const std::string event = pending.substr(0, end);
          pending.erase(0, end + 2);
          if (event == "data: [DONE]") {
            done = true;
          } else if (absl::StartsWith(event, "data: ")) {
            const nlohmann::json chunk = nlohmann::json::parse(event.substr(6), nullptr, false);
            if (chunk.is_discarded()) continue;
            if (chunk.contains("usage") && chunk["usage"].is_object()) {
              record.output_tokens = chunk["usage"].value("completion_tokens", 0);
            }
            if (chunk.contains("choices") && !chunk["choices"].empty()) ++deltas_in_read;
          }
        }
        return data.size();
      };
  parser.on_chunk_body(on_chunk);
  while (!parser.is_done()) {
    bhttp::read_some(c.stream, c.buffer, parser, ec);
    if (ec) break;
    const Clock::time_point now = Clock::now();
    if (deltas_in_read > 0) {
      if (record.token_messages == 0) {
        record.ttft_seconds = Seconds(now - start);
      } else {
        record.itl_seconds.push_back(Seconds(now - last));
      }
      last = now;
      ++record.token_messages;
      deltas_in_read = 0;
    }
  }
  record.e2e_seconds = Seconds(Clock::now() - start);
  c.stream.expires_never();
  if (ec || !parser.is_header_done()) {
    c.open = false;
    c.stream.close();
    return record;
  }
  record.code = done ? CodeForHttpStatus(parser.get().result_int()) : grpc::StatusCode::UNKNOWN;
  if (parser.get().result_int() != 200) record.code = CodeForHttpStatus(parser.get().result_int());
  if (!parser.get().keep_alive()) {
    c.open = false;
    c.stream.close();
  }
  return record;
}

}  // namespace textgen::client
