#include "server/loaded_server.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "model/arch/architectures.h"
#include "model/runtime/system_memory.h"
#include "model/tokenizer/draft_vocabulary.h"
#include "server/core/model_rules.h"
#include "server/model_info.h"

namespace textgen::server {
namespace {

// Gives the engine's KV cache its disk tier (--kv-cache-dir), before the scheduler runs.
// --kv-cache-dir: the cache's blocks on disk, and for a hybrid model its state snapshots, in a
// namespace of their own (files of the state's size) that takes half the directory's limit.
absl::Status AttachKvCacheDir(const ServerOptions& o, model::KvCache& cache, Logger* logger) {
  const absl::Time start = absl::Now();
  const bool snapshots = cache.has_recurrent_state();
  const int64_t limit = (o.kv_cache_dir_mb << 20) / (snapshots ? 2 : 1);
  absl::StatusOr<model::BlockKey> name_space =
      model::KvDiskNamespace(o.model_path, cache.layout(), o.kv_cache_dtype);
  if (!name_space.ok()) return name_space.status();
  const auto open = [&](const model::BlockKey& ns, int64_t file_bytes) {
    return model::KvDiskTier::Open({.dir = o.kv_cache_dir,
                                    .max_bytes = limit,
                                    .name_space = ns,
                                    .block_bytes = file_bytes,
                                    .warn = [logger](std::string_view line) {
                                      logger->Warning(absl::string_view(line.data(), line.size()));
                                    }});
  };
  absl::StatusOr<std::unique_ptr<model::KvDiskTier>> tier = open(*name_space, cache.block_bytes());
  if (!tier.ok()) return tier.status();
  const model::KvDiskTierStats& found = (*tier)->stats();
  std::string states;
  if (snapshots) {
    const int64_t state_bytes = cache.layout().recurrent_state_bytes;
    absl::StatusOr<std::unique_ptr<model::KvDiskTier>> state_tier =
        open(model::KvStateNamespace(*name_space, state_bytes), state_bytes);
    if (!state_tier.ok()) return state_tier.status();
    states = absl::StrFormat(" and %d state snapshots (%.1f MiB)", (*state_tier)->stats().files,
                             (*state_tier)->stats().bytes / 1048576.0);
    cache.AttachSnapshotTier(*std::move(state_tier));
  }
  logger->Info(
      absl::StrFormat("kv cache dir %s: %d blocks (%.1f MiB)%s of this model, limit %d MiB, "
                      "opened in %.2fs",
                      (*tier)->directory(), found.files, found.bytes / 1048576.0, states,
                      o.kv_cache_dir_mb, absl::ToDoubleSeconds(absl::Now() - start)));
  cache.AttachDiskTier(*std::move(tier));
  return absl::OkStatus();
}

// --draft-model: a causal model with the target's vocabulary, in an engine of its own whose KV
// cache holds as many tokens as the target's (plus a block per sequence for its drafts), under
// the memory the target and its KV budget leave.
absl::StatusOr<std::unique_ptr<model::Engine>> LoadDraftEngine(const ServerOptions& o,
                                                               const model::LoadedModel& target,
                                                               model::Engine& target_engine,
                                                               model::EngineOptions options,
                                                               Logger* logger) {
  const auto refuse = [&](const absl::Status& status) {
    return absl::Status(status.code(),
                        absl::StrCat("--draft-model ", o.draft_model, ": ", status.message()));
  };
  absl::StatusOr<model::LoadedModel> draft = model::LoadModel(o.draft_model);
  if (!draft.ok()) return refuse(draft.status());
  if (!draft->config.causal || model::SpecOf(draft->config.architecture).encoder) {
    return refuse(absl::InvalidArgumentError("an encoder cannot draft tokens"));
  }
  if (draft->config.has_recurrent_layers()) {
    return refuse(absl::InvalidArgumentError(
        "a model with recurrent layers cannot draft tokens yet (its state cannot be rolled "
        "back past a rejected draft)"));
  }
  if (absl::Status same = model::CheckDraftVocabulary(target.tokenizer, draft->tokenizer);
      !same.ok()) {
    return refuse(same);
  }
  const model::KvCache& target_cache = target_engine.kv_cache();
  const int64_t target_blocks = target_cache.budget_bytes() / target_cache.block_bytes();
  const int64_t draft_block_bytes =
      model::KvBlockBytes(model::KvCacheLayoutFor(draft->config, options));
  options.kv_cache_bytes = std::max<int64_t>(target_blocks + o.max_batch, 1) * draft_block_bytes;
  if (std::optional<int64_t> available = model::AvailableMemoryBytes()) {
    options.available_memory_bytes = std::max<int64_t>(*available - o.kv_cache_bytes, 0);
  }
  absl::StatusOr<std::unique_ptr<model::Engine>> engine = model::Engine::Create(*draft, options);
  if (!engine.ok()) return refuse(engine.status());
  logger->Info(absl::StrFormat("draft model %s: %s, %d layers, dim %d; its KV cache %.1f MiB",
                               o.draft_model, draft->config.name, draft->config.n_layers,
                               draft->config.dim,
                               static_cast<double>(options.kv_cache_bytes) / (1 << 20)));
  return engine;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoadedServer>> LoadServer(const ServerOptions& o, Metrics* metrics,
                                                         Logger* logger) {
  auto loaded = std::make_unique<LoadedServer>();
  model::LoadOptions load_options;
  load_options.tokenizer_path = o.tokenizer_path;
  absl::StatusOr<model::LoadedModel> model = model::LoadModel(o.model_path, load_options);
  if (!model.ok()) return model.status();
  loaded->model = *std::move(model);
  absl::StatusOr<std::unique_ptr<model::Tokenizer>> tokenizer =
      model::CreateTokenizer(loaded->model.tokenizer);
  if (!tokenizer.ok()) return tokenizer.status();
  loaded->tokenizer = *std::move(tokenizer);
  // Chat templates before the engine: a bad --chat-template fails in milliseconds.
  absl::StatusOr<ChatTemplates> chat_templates = ChatTemplates::Load(
      loaded->model.chat_templates, o.chat_template_path, *loaded->tokenizer,
      o.tool_call_format.empty() ? std::nullopt
                                 : model::ToolCallFormatFromName(o.tool_call_format));
  if (!chat_templates.ok()) return chat_templates.status();
  loaded->backend.chat_templates = *std::move(chat_templates);

  const model::EngineOptions engine_options = EngineOptionsOf(o);
  absl::StatusOr<std::unique_ptr<model::Engine>> engine =
      model::Engine::Create(loaded->model, engine_options);
  if (absl::IsResourceExhausted(engine.status())) {
    // The engine's message names what would fit; here are the flags that set it.
    return absl::ResourceExhaustedError(absl::StrCat(
        engine.status().message(), " (flags: --bf16, --kv-cache-mb, --max-batch-tokens)"));
  }
  if (!engine.ok()) return engine.status();
  loaded->engine = *std::move(engine);
  if (!o.kv_cache_dir.empty()) {
    if (absl::Status status = AttachKvCacheDir(o, loaded->engine->kv_cache(), logger);
        !status.ok()) {
      return status;
    }
  }

  if (!o.draft_model.empty()) {
    absl::StatusOr<std::unique_ptr<model::Engine>> draft =
        LoadDraftEngine(o, loaded->model, *loaded->engine, engine_options, logger);
    if (!draft.ok()) return draft.status();
    loaded->draft_engine = *std::move(draft);
  }

  loaded->scheduler =
      CreateBatchingScheduler(loaded->engine.get(), loaded->tokenizer.get(), SchedulerOptionsOf(o),
                              metrics, loaded->draft_engine.get());

  loaded->preparation = std::make_unique<PreparationPool>(PreparationPoolOptions{
      .threads = o.prep_threads, .max_queue = o.max_queue, .observer = metrics});

  ServiceBackend& backend = loaded->backend;
  backend.scheduler = loaded->scheduler.get();
  backend.preparation = loaded->preparation.get();
  backend.tokenizer = loaded->tokenizer.get();
  backend.validation = ValidationLimitsOf(o);
  ApplyModelRules(loaded->model, o.max_batch_tokens, backend.validation);
  loaded->constraints = std::make_unique<model::ConstraintCompiler>(ConstraintLimitsOf(o));
  backend.validation.constraints = loaded->constraints.get();
  // ~50 ms and ~15 MB for a 128k vocabulary, once.
  backend.validation.token_trie = model::TokenTrie::Build(*loaded->tokenizer);
  backend.model_info =
      DescribeModel(loaded->model, *loaded->tokenizer, backend.chat_templates,
                    ModelInfoOptions{.bf16 = o.bf16,
                                     .expose_model_path = o.expose_model_path,
                                     .limits = {.max_new_tokens_limit = o.max_new_tokens_limit,
                                                .max_batch_size = o.max_batch,
                                                .max_request_bytes = o.max_request_bytes}});
  // The engine holds its own (reordered) copy of every weight: unmap the file so its pages
  // do not stay resident next to that copy.
  loaded->model.weights = {};
  loaded->model.storage.reset();
  return loaded;
}

}  // namespace textgen::server
