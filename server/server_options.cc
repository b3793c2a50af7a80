#include "server/server_options.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/base/status_macros.h"
#include "model/chat/tool_call_format.h"

namespace textgen::server {
namespace {

absl::Status CheckAtLeast(int64_t value, int64_t min, absl::string_view flag) {
  if (value >= min) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", flag, " must be >= ", min, ", got ", value));
}

bool IsFile(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

}  // namespace

std::optional<PrefixCacheScope> ParsePrefixCacheScope(const std::string& name) {
  if (name == "principal") return PrefixCacheScope::kPerPrincipal;
  if (name == "global") return PrefixCacheScope::kGlobal;
  if (name == "off") return PrefixCacheScope::kOff;
  return std::nullopt;
}

std::optional<Speculation> ParseSpeculation(const std::string& name) {
  if (name == "off") return Speculation::kOff;
  if (name == "ngram") return Speculation::kNgram;
  if (name == "draft") return Speculation::kDraft;
  return std::nullopt;
}

absl::Status ValidateServerOptions(const ServerOptions& o) {
  if (o.listen.empty()) return absl::InvalidArgumentError("--listen must be HOST:PORT, got \"\"");
  for (const auto& [value, min, flag] :
       {std::tuple<int64_t, int64_t, const char*>{o.threads, 0, "threads"},
        {o.max_batch, 1, "max-batch"},
        {o.max_batch_tokens, 1, "max-batch-tokens"},
        {o.max_prefill_chunk, 0, "max-prefill-chunk"},
        {o.max_queue, 1, "max-queue"},
        {o.max_requests_per_principal, 0, "max-requests-per-principal"},
        {o.max_sessions_per_principal, 0, "max-sessions-per-principal"},
        {o.kv_cache_bytes, 1, "kv-cache-bytes"},
        {o.max_new_tokens, 1, "max-new-tokens"},
        {o.max_new_tokens_limit, 1, "max-new-tokens-limit"},
        {o.max_request_bytes, 1024, "max-request-bytes"},
        {o.max_prompt_bytes, 1, "max-prompt-bytes"},
        {o.max_stop_strings, 0, "max-stop-strings"},
        {o.max_stop_string_bytes, 1, "max-stop-string-bytes"},
        {o.max_stop_token_ids, 0, "max-stop-token-ids"},
        {o.max_logit_bias_entries, 0, "max-logit-bias-entries"},
        {o.max_session_id_bytes, 1, "max-session-id-bytes"},
        {o.max_constraint_bytes, 1, "max-constraint-bytes"},
        {o.max_grammar_symbols, 16, "max-grammar-symbols"},
        {o.max_constraint_compile_ms, 1, "max-constraint-compile-ms"},
        {o.constraint_cache_entries, 0, "constraint-cache-entries"},
        {o.max_sessions, 0, "max-sessions"},
        {o.responses_store_mb, 0, "responses-store-mb"},
        {o.http_threads, 1, "http-threads"},
        {o.prep_threads, 1, "prep-threads"},
        {o.http_max_connections, 0, "http-max-connections"},
        {o.speculative_draft_tokens, 1, "speculative-draft-tokens"},
        {o.speculative_max_batch, 1, "speculative-max-batch"}}) {
    TEXTGEN_RETURN_IF_ERROR(CheckAtLeast(value, min, flag));
  }
  if (o.max_prefill_chunk > o.max_batch_tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-prefill-chunk (", o.max_prefill_chunk, ") must not exceed --max-batch-tokens (",
        o.max_batch_tokens, "): no forward pass holds more"));
  }
  if (o.max_new_tokens > o.max_new_tokens_limit) {
    return absl::InvalidArgumentError(absl::StrCat("--max-new-tokens (", o.max_new_tokens,
                                                   ") must not exceed --max-new-tokens-limit (",
                                                   o.max_new_tokens_limit, ")"));
  }
  if (!o.tool_call_format.empty() && !model::ToolCallFormatFromName(o.tool_call_format)) {
    return absl::InvalidArgumentError(absl::StrCat("--tool-call-format must be one of ",
                                                   model::ToolCallFormatNames(), "; got \"",
                                                   o.tool_call_format, "\""));
  }
  if (o.session_ttl <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--session-ttl must be > 0, got ", absl::FormatDuration(o.session_ttl)));
  }
  if (o.responses_ttl <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--responses-ttl must be > 0, got ", absl::FormatDuration(o.responses_ttl)));
  }
  if (!ParsePrefixCacheScope(o.prefix_cache_scope)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prefix-cache-scope must be principal, global or off, got \"",
                     o.prefix_cache_scope, "\""));
  }
  if (!ParseSpeculation(o.speculative)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--speculative must be off, ngram or draft, got \"", o.speculative, "\""));
  }
  if (o.speculative == "draft" && o.draft_model.empty()) {
    return absl::InvalidArgumentError(
        "--speculative draft needs --draft-model FILE (a smaller model with the same vocabulary)");
  }
  if (o.speculative != "draft" && !o.draft_model.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--draft-model is used by --speculative draft only, not ", o.speculative));
  }
  if (!o.kv_cache_dir.empty() && o.prefix_cache_scope == "off") {
    return absl::InvalidArgumentError(
        "--kv-cache-dir keeps the prefix cache on disk: it needs --prefix-cache-scope principal "
        "or global, not off");
  }
  if (o.kv_cache_dir_mb <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kv-cache-dir-mb must be > 0, got ", o.kv_cache_dir_mb));
  }
  if (o.kv_cache_dtype != "f32" && o.kv_cache_dtype != "f16") {
    return absl::InvalidArgumentError(
        absl::StrCat("--kv-cache-dtype must be f32 or f16, got \"", o.kv_cache_dtype, "\""));
  }
  if (o.drain_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--drain-timeout must be >= 0, got ", absl::FormatDuration(o.drain_timeout)));
  }
  return absl::OkStatus();
}

model::EngineOptions EngineOptionsOf(const ServerOptions& o) {
  model::EngineOptions engine;
  engine.threads = o.threads;
  engine.bf16 = o.bf16;
  engine.quantized_kernels = !o.dequantize;
  engine.kv_cache_bytes = o.kv_cache_bytes;
  engine.kv_cache_f16 = o.kv_cache_dtype == "f16";
  engine.max_batch_tokens = o.max_batch_tokens;
  return engine;
}

SchedulerOptions SchedulerOptionsOf(const ServerOptions& o) {
  SchedulerOptions scheduler;
  scheduler.max_batch_sequences = o.max_batch;
  scheduler.max_batch_tokens = o.max_batch_tokens;
  scheduler.max_prefill_tokens_while_decoding = o.max_prefill_chunk;
  scheduler.max_queue = o.max_queue;
  scheduler.max_requests_per_principal = o.max_requests_per_principal;
  scheduler.max_sessions_per_principal = o.max_sessions_per_principal;
  scheduler.max_sessions = o.max_sessions;
  scheduler.session_ttl = o.session_ttl;
  scheduler.prefix_cache = ParsePrefixCacheScope(o.prefix_cache_scope).value();
  scheduler.speculation.mode = ParseSpeculation(o.speculative).value();
  scheduler.speculation.max_draft_tokens = o.speculative_draft_tokens;
  scheduler.speculation.max_batch = o.speculative_max_batch;
  return scheduler;
}

ValidationOptions ValidationLimitsOf(const ServerOptions& o) {
  ValidationOptions validation;
  validation.default_max_new_tokens = o.max_new_tokens;
  validation.max_new_tokens_limit = o.max_new_tokens_limit;
  validation.max_prompt_bytes = static_cast<size_t>(o.max_prompt_bytes);
  validation.max_stop_strings = o.max_stop_strings;
  validation.max_stop_string_bytes = o.max_stop_string_bytes;
  validation.max_stop_token_ids = o.max_stop_token_ids;
  validation.max_logit_bias_entries = o.max_logit_bias_entries;
  validation.max_session_id_bytes = o.max_session_id_bytes;
  return validation;
}

model::ConstraintLimits ConstraintLimitsOf(const ServerOptions& o) {
  return model::ConstraintLimits{
      .max_text_bytes = static_cast<size_t>(o.max_constraint_bytes),
      .max_grammar_symbols = o.max_grammar_symbols,
      .max_compile_time = absl::Milliseconds(o.max_constraint_compile_ms),
      .cache_entries = o.constraint_cache_entries};
}

absl::StatusOr<std::string> ResolveModelPath(const std::string& flag_model, const char* env_model,
                                             const std::string& executable_path) {
  if (!flag_model.empty()) return flag_model;
  if (env_model != nullptr && env_model[0] != '\0') return std::string(env_model);
  std::vector<std::string> tried;
  if (!executable_path.empty()) {
    const std::filesystem::path bin_dir = std::filesystem::path(executable_path).parent_path();
    tried.push_back((bin_dir / ".." / ".." / "models" / "default.gguf").lexically_normal());
  }
  tried.push_back("models/default.gguf");
  for (const std::string& candidate : tried) {
    if (IsFile(candidate)) return candidate;
  }
  return absl::NotFoundError(absl::StrCat("no model given and no bundled model found (tried ",
                                          absl::StrJoin(tried, ", "),
                                          "); pass --model PATH or set TEXTGEN_MODEL"));
}

}  // namespace textgen::server
