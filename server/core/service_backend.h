#pragma once

#include "absl/status/status.h"
#include "model/tokenizer/tokenizer.h"
#include "server/core/chat_validation.h"
#include "server/core/preparation_pool.h"
#include "server/core/validation.h"
#include "server/scheduler/scheduler.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server {

// Everything the front ends (gRPC and HTTP) need once the model is loaded. Must outlive them.
struct ServiceBackend {
  Scheduler* scheduler = nullptr;
  // Where requests are parsed, rendered and tokenized, off the transports' threads; null:
  // on the calling thread.
  PreparationPool* preparation = nullptr;
  const model::Tokenizer* tokenizer = nullptr;
  ValidationOptions validation;
  ChatTemplates chat_templates;
  v1::ModelInfo model_info;
};

// What every front end answers while there is no backend yet.
inline absl::Status ModelLoadingError() {
  return absl::UnavailableError("the model is still loading; retry in a moment");
}

}  // namespace textgen::server
