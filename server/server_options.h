#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/runtime/engine.h"
#include "server/core/preparation_pool.h"
#include "server/core/validation.h"
#include "server/http/openai/response_store.h"
#include "server/scheduler/scheduler.h"

namespace textgen::server {

// Everything textgen-server is configured with (filled from flags by main.cc). Defaults here
// are the flags' defaults; a setting that belongs to a layer takes its default from that
// layer's options struct, so each number is written once.
struct ServerOptions {
  std::string model_path;          // empty = the bundled default model
  std::string tokenizer_path;      // llama2.c checkpoints: their tokenizer.bin
  std::string chat_template_path;  // Jinja file replacing the model's default chat template
  std::string tool_call_format;    // empty: read off the chat template
  std::string listen = "0.0.0.0:50051";
  std::string metrics_listen = "0.0.0.0:9090";  // empty = no metrics endpoint
  std::string http_listen;                      // OpenAI-compatible HTTP API; empty = off
  int http_threads = 2;                         // its I/O threads
  int http_max_connections = 1024;              // open HTTP connections; beyond: closed at once
  std::string tls_cert;            // PEM chain: every listener speaks TLS; empty = plain text
  std::string tls_key;             // its PEM private key
  std::string tls_client_ca;       // PEM CAs: clients need a certificate they signed (mutual TLS)
  std::string api_keys_file;       // "PRINCIPAL KEY" lines; empty = no auth
  bool expose_model_path = false;  // publish the file path in GetModelInfo
  int threads = 0;                 // engine threads, 0 = all cores
  int prep_threads = PreparationPoolOptions{}.threads;         // parse, render, tokenize requests
  int max_batch = SchedulerOptions{}.max_batch_sequences;      // running sequences per step
  int max_batch_tokens = SchedulerOptions{}.max_batch_tokens;  // tokens per forward pass
  // Prompt tokens per forward pass while others decode; 0: no limit but max_batch_tokens.
  int max_prefill_chunk = SchedulerOptions{}.max_prefill_tokens_while_decoding;
  int max_queue = SchedulerOptions{}.max_queue;  // waiting requests
  int max_requests_per_principal = 0;            // queued + running per API key owner; 0 = off
  int max_sessions_per_principal = 0;            // sessions kept per API key owner; 0 = off
  int64_t kv_cache_bytes = model::EngineOptions{}.kv_cache_bytes;       // KV cache budget
  int max_new_tokens = ValidationOptions{}.default_max_new_tokens;      // when a request says 0
  int max_new_tokens_limit = ValidationOptions{}.max_new_tokens_limit;  // most one may ask
  int max_request_bytes = 4 << 20;  // largest request message gRPC accepts
  int64_t max_prompt_bytes = ValidationOptions{}.max_prompt_bytes;  // checked before tokenizing
  int max_stop_strings = ValidationOptions{}.max_stop_strings;      // per request
  int max_stop_string_bytes = ValidationOptions{}.max_stop_string_bytes;  // each
  int max_stop_token_ids = ValidationOptions{}.max_stop_token_ids;        // per request
  int max_logit_bias_entries = ValidationOptions{}.max_logit_bias_entries;
  int max_session_id_bytes = ValidationOptions{}.max_session_id_bytes;
  // Output constraints (structured output).
  int64_t max_constraint_bytes = model::ConstraintLimits{}.max_text_bytes;
  int64_t max_grammar_symbols = model::ConstraintLimits{}.max_grammar_symbols;
  int64_t max_constraint_compile_ms =
      absl::ToInt64Milliseconds(model::ConstraintLimits{}.max_compile_time);
  int constraint_cache_entries = model::ConstraintLimits{}.cache_entries;
  absl::Duration session_ttl = SchedulerOptions{}.session_ttl;
  // Who shares cached prompt K/V: "principal" (each API key its own), "global", or "off".
  std::string prefix_cache_scope = "principal";
  // Where cached K/V outlives the process (spilled on eviction, written on drain, found again
  // at startup and by replicas sharing it); empty: memory only.
  std::string kv_cache_dir;
  int64_t kv_cache_dir_mb = 10240;  // the directory's size limit (least recently used go)
  int max_sessions = SchedulerOptions{}.max_sessions;
  // Speculative decoding: "off", "ngram" (prompt lookup) or "draft" (by draft_model, a smaller
  // model with the same vocabulary), the tokens drafted per step (shared out among the
  // decoding sequences), and the decoding sequences above which nobody drafts.
  std::string speculative = "off";
  std::string draft_model;
  int speculative_draft_tokens = SpeculationOptions{}.max_draft_tokens;
  int speculative_max_batch = SpeculationOptions{}.max_batch;
  // The Responses API's stored responses (store: true): memory budget and age.
  int64_t responses_store_mb = static_cast<int64_t>(http::ResponseStoreOptions{}.max_bytes >> 20);
  absl::Duration responses_ttl = http::ResponseStoreOptions{}.ttl;
  absl::Duration drain_timeout = absl::Seconds(30);
  bool bf16 = false;
  bool dequantize = false;  // quantized weights to the compute type, not the integer kernels
  std::string kv_cache_dtype = "f32";  // or "f16": half the KV memory and attention reads
  std::string log_level = "info";
};

// The scope named by --prefix-cache-scope, or nullopt for an unknown name.
std::optional<PrefixCacheScope> ParsePrefixCacheScope(const std::string& name);
// The mode named by --speculative, or nullopt for an unknown name.
std::optional<Speculation> ParseSpeculation(const std::string& name);

// Checks ranges and consistency; INVALID_ARGUMENT names the flag, the value and the range.
absl::Status ValidateServerOptions(const ServerOptions& options);

// Each layer's options from the server's, for options that passed ValidateServerOptions: the
// one place each flag reaches its layer.
model::EngineOptions EngineOptionsOf(const ServerOptions& options);
SchedulerOptions SchedulerOptionsOf(const ServerOptions& options);
// The operator's request limits (the model's own rules come from ApplyModelRules).
ValidationOptions ValidationLimitsOf(const ServerOptions& options);
model::ConstraintLimits ConstraintLimitsOf(const ServerOptions& options);

// Where the model comes from when --model is empty, in order: $TEXTGEN_MODEL (`env_model`,
// may be null), <dir of the executable>/../../models/default.gguf (build/bin -> repo), then
// ./models/default.gguf. NOT_FOUND lists every place tried.
absl::StatusOr<std::string> ResolveModelPath(const std::string& flag_model, const char* env_model,
                                             const std::string& executable_path);

}  // namespace textgen::server
