// textgen-server: flags and wiring only. Starts the gRPC server (health NOT_SERVING), loads
// the model, turns SERVING, and drains on SIGTERM / SIGINT.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "server/auth/api_keys.h"
#include "server/grpc/drain.h"
#include "server/grpc/service.h"
#include "server/http/http_api.h"
#include "server/loaded_server.h"
#include "server/observability/logging.h"
#include "server/observability/metrics.h"
#include "server/server_options.h"
#include "server/tls/tls_credentials.h"
#include "server/transport/http_server.h"

namespace {
const textgen::server::ServerOptions kDefaults;
}  // namespace

ABSL_FLAG(std::string, model, "",
          "Model file: GGUF or llama2.c checkpoint. Empty: $TEXTGEN_MODEL, else the bundled "
          "models/default.gguf (next to the build dir, or in the current dir)");
ABSL_FLAG(std::string, tokenizer, "",
          "tokenizer.bin for a llama2.c checkpoint (empty: look next to the checkpoint)");
ABSL_FLAG(std::string, chat_template, "",
          "Jinja chat template file for the Chat RPC, replacing the model file's "
          "tokenizer.chat_template (needed for models without one)");
ABSL_FLAG(std::string, tool_call_format, "",
          "How the model writes tool calls: hermes, llama3-json, mistral, phi4-mini or "
          "generic-json (empty: read off the chat template's markers)");
ABSL_FLAG(std::string, listen, kDefaults.listen, "gRPC listen address HOST:PORT");
ABSL_FLAG(std::string, metrics_listen, kDefaults.metrics_listen,
          "Prometheus /metrics HTTP address HOST:PORT (empty: no metrics endpoint)");
ABSL_FLAG(std::string, http_listen, kDefaults.http_listen,
          "OpenAI-compatible HTTP API address HOST:PORT (/v1/chat/completions, /v1/completions, "
          "/v1/models, /health); empty: off");
ABSL_FLAG(int, prep_threads, kDefaults.prep_threads,
          "Threads that parse, render and tokenize requests before they queue (off the gRPC and "
          "HTTP threads)");
ABSL_FLAG(int, http_threads, kDefaults.http_threads,
          "I/O threads of the HTTP API (they parse and stream; the engine has its own)");
ABSL_FLAG(int, http_max_connections, kDefaults.http_max_connections,
          "Most open HTTP API connections (each streams at most one response at a time); "
          "beyond it new connections are closed at once. 0 = no limit");
ABSL_FLAG(std::string, tls_cert, kDefaults.tls_cert,
          "PEM certificate chain (leaf first): the gRPC, HTTP and metrics listeners then speak "
          "TLS 1.2+ only. Needs --tls-key. Empty: plain text (keep listeners on loopback)");
ABSL_FLAG(std::string, tls_key, kDefaults.tls_key, "PEM private key of --tls-cert (unencrypted)");
ABSL_FLAG(std::string, tls_client_ca, kDefaults.tls_client_ca,
          "PEM CA certificates: with it, every listener requires a client certificate they "
          "signed (mutual TLS); without --api-keys-file the certificate's subject is then the "
          "principal");
ABSL_FLAG(std::string, api_keys_file, kDefaults.api_keys_file,
          "File of 'PRINCIPAL KEY' lines: every RPC and HTTP route but health checks and "
          "reflection then needs 'authorization: Bearer KEY'; sessions belong to their "
          "principal. Re-read on SIGHUP. Empty: no authentication");
ABSL_FLAG(bool, expose_model_path, kDefaults.expose_model_path,
          "Publish the model file's path in GetModelInfo (off: clients learn nothing about the "
          "server's file system)");
ABSL_FLAG(int, threads, kDefaults.threads, "Engine (oneDNN) threads; 0 = all cores");
ABSL_FLAG(int, max_batch, kDefaults.max_batch, "Most sequences running in one engine step");
ABSL_FLAG(int, max_batch_tokens, kDefaults.max_batch_tokens,
          "Most tokens (decode + prefill chunks) in one forward pass");
ABSL_FLAG(int, max_prefill_chunk, kDefaults.max_prefill_chunk,
          "Most prompt tokens per forward pass while D requests decode: max(this, D) (keeps their "
          "inter-token latency flat); an idle server prefills up to --max-batch-tokens. "
          "0: no extra limit");
ABSL_FLAG(int, max_queue, kDefaults.max_queue,
          "Most requests waiting for admission; beyond it Generate fails RESOURCE_EXHAUSTED");
ABSL_FLAG(int, max_requests_per_principal, kDefaults.max_requests_per_principal,
          "With --api-keys-file: most requests one principal may have queued or running "
          "(beyond: RESOURCE_EXHAUSTED / HTTP 429); 0 = no limit");
ABSL_FLAG(int, max_sessions_per_principal, kDefaults.max_sessions_per_principal,
          "With --api-keys-file: most sessions one principal may keep; beyond it that "
          "principal's least recently used idle session is evicted (RESOURCE_EXHAUSTED when all "
          "are busy); 0 = no limit of its own");
ABSL_FLAG(int64_t, kv_cache_bytes, 0, "KV cache budget in bytes (overrides --kv-cache-mb)");
ABSL_FLAG(int64_t, kv_cache_mb, kDefaults.kv_cache_bytes >> 20, "KV cache budget in MiB");
ABSL_FLAG(int, max_new_tokens, kDefaults.max_new_tokens,
          "Tokens generated when a request does not say (shortened to fit the context)");
ABSL_FLAG(int, max_new_tokens_limit, kDefaults.max_new_tokens_limit,
          "Most tokens a request may ask for (larger: INVALID_ARGUMENT)");
ABSL_FLAG(int, max_request_bytes, kDefaults.max_request_bytes,
          "Largest request message accepted, in bytes (bigger: RESOURCE_EXHAUSTED from gRPC); "
          "published in GetModelInfo so clients can check a prompt before sending it");
ABSL_FLAG(int64_t, max_prompt_bytes, kDefaults.max_prompt_bytes,
          "Largest text prompt in bytes (Chat: all message text, tools and variables together); "
          "checked before tokenizing or rendering (bigger: INVALID_ARGUMENT / HTTP 400)");
ABSL_FLAG(int, max_stop_strings, kDefaults.max_stop_strings,
          "Most stop strings per request (more: INVALID_ARGUMENT / HTTP 400); each is matched "
          "against every generated token");
ABSL_FLAG(int, max_stop_string_bytes, kDefaults.max_stop_string_bytes,
          "Longest stop string in bytes (longer: INVALID_ARGUMENT / HTTP 400)");
ABSL_FLAG(int, max_stop_token_ids, kDefaults.max_stop_token_ids,
          "Most stop token ids per request (more: INVALID_ARGUMENT / HTTP 400)");
ABSL_FLAG(int, max_logit_bias_entries, kDefaults.max_logit_bias_entries,
          "Most logit_bias entries per request (more: INVALID_ARGUMENT / HTTP 400); each is "
          "applied to every generated token");
ABSL_FLAG(int, max_session_id_bytes, kDefaults.max_session_id_bytes,
          "Longest session id in bytes (longer: INVALID_ARGUMENT / HTTP 400)");
ABSL_FLAG(int64_t, max_constraint_bytes, kDefaults.max_constraint_bytes,
          "Largest output constraint (JSON Schema, regex or GBNF grammar) in bytes (larger: "
          "INVALID_ARGUMENT / HTTP 400)");
ABSL_FLAG(int64_t, max_grammar_symbols, kDefaults.max_grammar_symbols,
          "Largest compiled constraint grammar in symbols, ~10 bytes each (larger: "
          "RESOURCE_EXHAUSTED / HTTP 429)");
ABSL_FLAG(int64_t, max_constraint_compile_ms, kDefaults.max_constraint_compile_ms,
          "Longest a constraint may take to compile (longer: RESOURCE_EXHAUSTED)");
ABSL_FLAG(int, constraint_cache_entries, kDefaults.constraint_cache_entries,
          "Compiled constraints kept for reuse (by content)");
ABSL_FLAG(absl::Duration, session_ttl, kDefaults.session_ttl,
          "Idle time after which a session's KV cache is freed (e.g. 10m, 90s)");
ABSL_FLAG(std::string, speculative, kDefaults.speculative,
          "Speculative decoding: off, ngram (drafts by prompt lookup) or draft (drafts by "
          "--draft-model); drafts are verified in one forward pass and the output is bit for bit "
          "the same as without");
ABSL_FLAG(std::string, draft_model, kDefaults.draft_model,
          "With --speculative draft: a smaller GGUF model with the same vocabulary that drafts "
          "tokens (greedily, on the engine's threads; its KV cache holds as many tokens as the "
          "main model's)");
ABSL_FLAG(int, speculative_draft_tokens, kDefaults.speculative_draft_tokens,
          "Tokens drafted per step, shared out among the sequences decoding (each adapts its "
          "own length below its share)");
ABSL_FLAG(int, speculative_max_batch, kDefaults.speculative_max_batch,
          "Sequences decoding at once above which nobody drafts (a busy batch pays for every "
          "drafted row)");
ABSL_FLAG(std::string, prefix_cache_scope, kDefaults.prefix_cache_scope,
          "Who shares cached prompt K/V: principal (each API key only its own prefixes), "
          "global (every request every prefix: single-tenant only, a cache-timing side channel "
          "between tenants otherwise), or off");
ABSL_FLAG(std::string, kv_cache_dir, kDefaults.kv_cache_dir,
          "Keep cached K/V on disk here too: blocks evicted from memory are written, the cache "
          "is written out on drain, and a restarted server (or a replica sharing the directory) "
          "continues conversations from it. Keyed by the model file's content and the KV type");
ABSL_FLAG(int64_t, kv_cache_dir_mb, kDefaults.kv_cache_dir_mb,
          "Size limit of --kv-cache-dir in MiB; the least recently used blocks are removed");
ABSL_FLAG(int64_t, responses_store_mb, kDefaults.responses_store_mb,
          "Memory for stored responses of the Responses API (store: true; what "
          "previous_response_id continues and GET /v1/responses/{id} returns) in MiB; the "
          "oldest go first. 0 = keep none");
ABSL_FLAG(absl::Duration, responses_ttl, kDefaults.responses_ttl,
          "How long a stored response of the Responses API is kept (e.g. 1h, 30m)");
ABSL_FLAG(int, max_sessions, kDefaults.max_sessions,
          "Most sessions kept; beyond it the least recently used idle one is evicted");
ABSL_FLAG(absl::Duration, drain_timeout, kDefaults.drain_timeout,
          "On SIGTERM/SIGINT: how long running requests may take to finish before exit");
ABSL_FLAG(bool, bf16, kDefaults.bf16, "Compute in bf16 (needs AVX512-BF16) instead of f32");
ABSL_FLAG(bool, dequantize, kDefaults.dequantize,
          "Dequantize Q4_0..Q8_0 / K-quant weights to the compute type at load instead of "
          "running the integer kernels on 8-bit activations: several times the memory and "
          "slower, but exact against f32 references");
ABSL_FLAG(std::string, kv_cache_dtype, kDefaults.kv_cache_dtype,
          "KV cache element type: f32 (exact) or f16 (half the memory, llama.cpp's default)");
ABSL_FLAG(std::string, log_level, kDefaults.log_level, "debug, info, warning or error");

namespace textgen::server {
namespace {

ServerOptions OptionsFromFlags() {
  ServerOptions o;
  o.model_path = absl::GetFlag(FLAGS_model);
  o.tokenizer_path = absl::GetFlag(FLAGS_tokenizer);
  o.chat_template_path = absl::GetFlag(FLAGS_chat_template);
  o.tool_call_format = absl::GetFlag(FLAGS_tool_call_format);
  o.listen = absl::GetFlag(FLAGS_listen);
  o.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  o.http_listen = absl::GetFlag(FLAGS_http_listen);
  o.http_threads = absl::GetFlag(FLAGS_http_threads);
  o.prep_threads = absl::GetFlag(FLAGS_prep_threads);
  o.http_max_connections = absl::GetFlag(FLAGS_http_max_connections);
  o.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key = absl::GetFlag(FLAGS_tls_key);
  o.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  o.api_keys_file = absl::GetFlag(FLAGS_api_keys_file);
  o.expose_model_path = absl::GetFlag(FLAGS_expose_model_path);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.max_batch = absl::GetFlag(FLAGS_max_batch);
  o.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  o.max_prefill_chunk = absl::GetFlag(FLAGS_max_prefill_chunk);
  o.max_queue = absl::GetFlag(FLAGS_max_queue);
  o.max_requests_per_principal = absl::GetFlag(FLAGS_max_requests_per_principal);
  o.max_sessions_per_principal = absl::GetFlag(FLAGS_max_sessions_per_principal);
  const int64_t bytes = absl::GetFlag(FLAGS_kv_cache_bytes);
  o.kv_cache_bytes = bytes > 0 ? bytes : absl::GetFlag(FLAGS_kv_cache_mb) << 20;
  o.max_new_tokens = absl::GetFlag(FLAGS_max_new_tokens);
  o.max_new_tokens_limit = absl::GetFlag(FLAGS_max_new_tokens_limit);
  o.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  o.max_prompt_bytes = absl::GetFlag(FLAGS_max_prompt_bytes);
  o.max_stop_strings = absl::GetFlag(FLAGS_max_stop_strings);
  o.max_stop_string_bytes = absl::GetFlag(FLAGS_max_stop_string_bytes);
  o.max_stop_token_ids = absl::GetFlag(FLAGS_max_stop_token_ids);
  o.max_logit_bias_entries = absl::GetFlag(FLAGS_max_logit_bias_entries);
  o.max_session_id_bytes = absl::GetFlag(FLAGS_max_session_id_bytes);
  o.max_constraint_bytes = absl::GetFlag(FLAGS_max_constraint_bytes);
  o.max_grammar_symbols = absl::GetFlag(FLAGS_max_grammar_symbols);
  o.max_constraint_compile_ms = absl::GetFlag(FLAGS_max_constraint_compile_ms);
  o.constraint_cache_entries = absl::GetFlag(FLAGS_constraint_cache_entries);
  o.session_ttl = absl::GetFlag(FLAGS_session_ttl);
  o.prefix_cache_scope = absl::GetFlag(FLAGS_prefix_cache_scope);
  o.speculative = absl::GetFlag(FLAGS_speculative);
  o.draft_model = absl::GetFlag(FLAGS_draft_model);
  o.speculative_draft_tokens = absl::GetFlag(FLAGS_speculative_draft_tokens);
  o.speculative_max_batch = absl::GetFlag(FLAGS_speculative_max_batch);
  o.kv_cache_dir = absl::GetFlag(FLAGS_kv_cache_dir);
  o.kv_cache_dir_mb = absl::GetFlag(FLAGS_kv_cache_dir_mb);
  o.responses_store_mb = absl::GetFlag(FLAGS_responses_store_mb);
  o.responses_ttl = absl::GetFlag(FLAGS_responses_ttl);
  o.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  o.drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  o.bf16 = absl::GetFlag(FLAGS_bf16);
  o.dequantize = absl::GetFlag(FLAGS_dequantize);
  o.kv_cache_dtype = absl::GetFlag(FLAGS_kv_cache_dtype);
  o.log_level = absl::GetFlag(FLAGS_log_level);
  return o;
}

// 127.0.0.0/8, ::1 or localhost.
bool IsLoopbackAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  absl::string_view host = address.substr(0, colon);
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  return absl::StartsWith(host, "127.") || host == "::1" || host == "localhost";
}

// gRPC's own TLS with the checked PEMs (mutual: a client certificate the CAs signed is required
// before any RPC); plain text without them.
std::shared_ptr<grpc::ServerCredentials> GrpcCredentials(const tls::TlsCredentials& pems) {
  if (pems.cert_chain_pem.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(
      pems.mutual() ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                    : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_root_certs = pems.client_ca_pem;
  ssl.pem_key_cert_pairs.push_back({pems.private_key_pem, pems.cert_chain_pem});
  return grpc::SslServerCredentials(ssl);
}

std::string ExecutablePath() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : path.string();
}

// TLS files and API keys, read and checked once, before anything listens.
struct Security {
  tls::TlsCredentials tls;
  std::unique_ptr<auth::Authenticator> authenticator;  // null without --api-keys-file
  auth::AuthPolicy policy;

  bool tls_enabled() const { return !tls.cert_chain_pem.empty(); }
  std::optional<tls::TlsCredentials> listener_tls() const {
    return tls_enabled() ? std::optional<tls::TlsCredentials>(tls) : std::nullopt;
  }
};

absl::StatusOr<Security> LoadSecurity(const ServerOptions& options, Logger& logger) {
  Security security;
  absl::StatusOr<tls::TlsCredentials> tls =
      tls::LoadTlsCredentials({.cert_file = options.tls_cert,
                               .key_file = options.tls_key,
                               .client_ca_file = options.tls_client_ca});
  if (!tls.ok()) return tls.status();
  security.tls = *std::move(tls);
  if (!options.api_keys_file.empty()) {
    absl::StatusOr<std::unique_ptr<auth::Authenticator>> created =
        auth::Authenticator::Create(options.api_keys_file);
    if (!created.ok()) return created.status();
    security.authenticator = *std::move(created);
    logger.Info(absl::StrFormat("api keys: %d loaded from %s", security.authenticator->key_count(),
                                options.api_keys_file));
  }
  // Under mutual TLS without API keys, a client is who its certificate says.
  security.policy = auth::AuthPolicy(security.authenticator.get(), security.tls.mutual());
  return security;
}

// A non-loopback listener without TLS shows prompts, outputs and keys to the network; without
// keys or client certificates anyone who reaches it can use the model and its sessions.
void WarnAboutExposedListeners(const ServerOptions& options, const Security& security,
                               Logger& logger) {
  const bool authenticates =
      security.policy.uses_api_keys() || security.policy.reads_client_certificate();
  for (const std::string& address : {options.listen, options.http_listen, options.metrics_listen}) {
    if (address.empty() || IsLoopbackAddress(address)) continue;
    if (!security.tls_enabled()) {
      logger.Warning(absl::StrCat("listening on ", address,
                                  " in plain text: give --tls-cert and --tls-key (or keep it on "
                                  "loopback behind a TLS-terminating proxy)"));
    }
    if (address != options.metrics_listen && !authenticates) {
      logger.Warning(absl::StrCat("listening on ", address,
                                  " without --api-keys-file or --tls-client-ca: anyone who can "
                                  "reach it can generate and use sessions"));
    }
  }
}

// The gRPC server with `service`, serving health NOT_SERVING until the model is loaded; null
// when it cannot listen.
std::unique_ptr<grpc::Server> StartGrpc(const ServerOptions& options, const Security& security,
                                        TextGenerationService& service, int* port) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, GrpcCredentials(security.tls), port);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || *port == 0) return nullptr;
  SetServing(*server, false);
  return server;
}

// The HTTP API's listener (null when --http-listen is empty).
absl::StatusOr<std::unique_ptr<http::HttpServer>> StartHttp(const ServerOptions& options,
                                                            const Security& security,
                                                            http::HttpApi& api) {
  if (options.http_listen.empty()) return nullptr;
  http::HttpServerOptions http_options;
  http_options.listen = options.http_listen;
  http_options.threads = options.http_threads;
  http_options.max_body_bytes = static_cast<size_t>(options.max_request_bytes);
  http_options.max_connections = options.http_max_connections;
  http_options.tls = security.listener_tls();
  return http::HttpServer::Start(http_options, std::bind_front(&http::HttpApi::Handle, &api),
                                 std::bind_front(&http::HttpApi::TransportError, &api));
}

// SIGHUP: re-reads the API keys, keeping the current ones when the file is bad.
void ReloadApiKeys(const ServerOptions& options, auth::Authenticator* authenticator,
                   Logger& logger) {
  if (authenticator == nullptr) {
    logger.Info("SIGHUP: no --api-keys-file, nothing to reload");
  } else if (absl::Status reloaded = authenticator->Reload(); !reloaded.ok()) {
    logger.Warning(absl::StrCat("SIGHUP: keeping the current API keys: ", reloaded.ToString()));
  } else {
    logger.Info(absl::StrFormat("SIGHUP: api keys: %d loaded from %s", authenticator->key_count(),
                                options.api_keys_file));
  }
}

// After a shutdown signal: running requests finish (within --drain-timeout), then everything
// stops in order.
void DrainAndStop(const ServerOptions& options, std::unique_ptr<grpc::Server> server,
                  std::unique_ptr<http::HttpServer> http_server, http::HttpApi& http_api,
                  std::unique_ptr<LoadedServer> loaded, Logger& logger) {
  http_api.StartDraining();
  DrainAndShutdown(*server, loaded->preparation.get(), loaded->scheduler.get(),
                   options.drain_timeout, &logger);
  server->Wait();
  server.reset();  // no gRPC handler runs past this point
  // The engine is done, but a finished stream may still be writing its last bytes: give
  // HTTP clients a few seconds to receive them, then close what is left (sinks see IsClosed()).
  if (http_server != nullptr) {
    http_server->Drain(absl::Seconds(5));
    http_server->Stop();
  }
  loaded->preparation.reset();
  loaded->scheduler.reset();  // stops the engine thread (and drops every sink it held)
  if (const model::KvDiskTier* disk = loaded->engine->kv_cache().disk_tier()) {
    logger.Info(absl::StrFormat("kv cache dir %s: wrote %d blocks (%.1f MiB) this run, %d on disk",
                                disk->directory(), disk->stats().writes,
                                disk->stats().written_bytes / 1048576.0, disk->stats().files));
  }
  loaded.reset();
  http_server.reset();  // only now: a sink may hold an exchange on its connections
}

int Run(ServerOptions options) {
  absl::StatusOr<LogLevel> level = ParseLogLevel(options.log_level);
  if (!level.ok()) {
    std::fprintf(stderr, "textgen-server: %s\n", level.status().ToString().c_str());
    return 2;
  }
  Logger logger(*level);
  if (absl::Status status = ValidateServerOptions(options); !status.ok()) {
    logger.Error(status.ToString());
    return 2;
  }
  absl::StatusOr<std::string> model_path =
      ResolveModelPath(options.model_path, std::getenv("TEXTGEN_MODEL"), ExecutablePath());
  if (!model_path.ok()) {
    logger.Error(model_path.status().ToString());
    return 2;
  }
  options.model_path = *model_path;
  absl::StatusOr<Security> security = LoadSecurity(options, logger);
  if (!security.ok()) {
    logger.Error(security.status().ToString());
    return 2;
  }
  absl::StatusOr<std::unique_ptr<Metrics>> metrics = Metrics::Create(
      MetricsOptions{.listen_address = options.metrics_listen, .tls = security->listener_tls()});
  if (!metrics.ok()) {
    logger.Error(metrics.status().ToString());
    return 1;
  }

  // Both front ends share the auth policy, the observer, the logger and (once loaded) the
  // backend.
  TextGenerationService service(
      ServiceOptions{.auth = security->policy, .observer = metrics->get(), .logger = &logger});
  int port = 0;
  std::unique_ptr<grpc::Server> server = StartGrpc(options, *security, service, &port);
  if (server == nullptr) {
    logger.Error(absl::StrCat("--listen ", options.listen,
                              ": cannot listen (address in use or not HOST:PORT?)"));
    return 1;
  }
  http::HttpApi http_api(http::HttpApiOptions{
      .auth = security->policy,
      .observer = metrics->get(),
      .logger = &logger,
      .openai = {
          .response_store = {.max_bytes = static_cast<size_t>(options.responses_store_mb) << 20,
                             .ttl = options.responses_ttl}}});
  absl::StatusOr<std::unique_ptr<http::HttpServer>> http_server =
      StartHttp(options, *security, http_api);
  if (!http_server.ok()) {
    logger.Error(absl::StrCat("--http-listen: ", http_server.status().message()));
    server->Shutdown();
    return 1;
  }
  WarnAboutExposedListeners(options, *security, logger);

  const absl::Time load_start = absl::Now();
  absl::StatusOr<std::unique_ptr<LoadedServer>> loaded =
      LoadServer(options, metrics->get(), &logger);
  if (!loaded.ok()) {
    logger.Error(absl::StrCat("cannot load model ", options.model_path,
                              options.draft_model.empty() ? "" : " with its draft model", ": ",
                              loaded.status().ToString()));
    server->Shutdown();
    if (*http_server != nullptr) (*http_server)->Stop();
    return 1;
  }
  const absl::Duration load_time = absl::Now() - load_start;
  const v1::ModelInfo& info = (*loaded)->backend.model_info;
  (*metrics)->SetModelInfo(info.name(), info.architecture(), info.file_dtype());
  service.SetBackend(&(*loaded)->backend);
  http_api.SetBackend(&(*loaded)->backend);
  SetServing(*server, true);
  // One line with everything an operator (and the e2e tests, which read grpc_port=) needs.
  logger.Info(absl::StrFormat(
      "serving model=%s path=%s arch=%s params=%d file_dtype=%s compute_dtype=%s context=%d "
      "listen=%s grpc_port=%d metrics_listen=%s metrics_port=%d http_listen=%s http_port=%d "
      "tls=%s load_time=%.2fs",
      info.name(), options.model_path, info.architecture(), info.parameters(), info.file_dtype(),
      info.compute_dtype(), info.context_length(), options.listen, port,
      options.metrics_listen.empty() ? "off" : options.metrics_listen, (*metrics)->port(),
      options.http_listen.empty() ? "off" : options.http_listen,
      *http_server != nullptr ? (*http_server)->port() : 0,
      !security->tls_enabled() ? "off" : (security->tls.mutual() ? "mutual" : "on"),
      absl::ToDoubleSeconds(load_time)));

  const int signal_number =
      WaitForShutdownSignal([&] { ReloadApiKeys(options, security->authenticator.get(), logger); });
  logger.Info(absl::StrFormat("signal %d: draining (timeout %s)", signal_number,
                              absl::FormatDuration(options.drain_timeout)));
  DrainAndStop(options, std::move(server), *std::move(http_server), http_api, *std::move(loaded),
               logger);
  logger.Info("stopped");
  return 0;
}

// "--max-batch=4" -> "--max_batch=4": the documented flags use dashes, absl uses underscores.
std::vector<std::string> NormalizeFlagDashes(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg[0] != '-') continue;
    const size_t name_start = arg[1] == '-' ? 2 : 1;
    const size_t name_end = std::min(arg.find('='), arg.size());
    for (size_t k = name_start; k < name_end; ++k) {
      if (arg[k] == '-') arg[k] = '_';
    }
  }
  return args;
}

}  // namespace
}  // namespace textgen::server

int main(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the blocked mask (see drain.h).
  if (absl::Status status = textgen::server::BlockShutdownSignals(); !status.ok()) {
    std::fprintf(stderr, "textgen-server: %s\n", status.ToString().c_str());
    return 1;
  }
  // --help lists this file's flags (absl matches on the program name by default).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view path) {
    return absl::EndsWith(path, "server/main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  absl::SetProgramUsageMessage(
      "textgen gRPC text-generation server.\n"
      "Usage: textgen-server [--model PATH] [--listen HOST:PORT] [--metrics-listen HOST:PORT] "
      "...\nFlags may be written with dashes or underscores (--max-batch or --max_batch).");
  std::vector<std::string> args = textgen::server::NormalizeFlagDashes(argc, argv);
  std::vector<char*> arg_pointers;
  for (std::string& arg : args) arg_pointers.push_back(arg.data());
  absl::ParseCommandLine(static_cast<int>(arg_pointers.size()), arg_pointers.data());
  return textgen::server::Run(textgen::server::OptionsFromFlags());
}
