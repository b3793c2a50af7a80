#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "model/format/model_loader.h"
#include "model/runtime/engine.h"
#include "model/tokenizer/tokenizer.h"
#include "server/core/preparation_pool.h"
#include "server/core/service_backend.h"
#include "server/observability/logging.h"
#include "server/observability/metrics.h"
#include "server/scheduler/scheduler.h"
#include "server/server_options.h"

namespace textgen::server {

// The loaded model and everything built on it. Members are declared in dependency order so
// destruction (reverse) stops the scheduler before the engine, the engine before the model.
struct LoadedServer {
  model::LoadedModel model;
  std::unique_ptr<model::Tokenizer> tokenizer;
  std::unique_ptr<model::Engine> engine;
  std::unique_ptr<model::Engine> draft_engine;  // --speculative draft
  std::unique_ptr<Scheduler> scheduler;
  // After the scheduler: destroyed first, its last tasks still reach a live scheduler.
  std::unique_ptr<PreparationPool> preparation;
  std::unique_ptr<model::ConstraintCompiler> constraints;
  ServiceBackend backend;
};

// Loads the model of `options` (validated) and builds what serves it: tokenizer, chat
// templates (a bad one fails before the engine is built), engine, the KV cache's disk tier,
// the draft model, scheduler, preparation pool, and the backend the front ends share.
absl::StatusOr<std::unique_ptr<LoadedServer>> LoadServer(const ServerOptions& options,
                                                         Metrics* metrics, Logger* logger);

}  // namespace textgen::server
