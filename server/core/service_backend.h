#pragma once

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

}  // namespace textgen::server
