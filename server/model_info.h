#pragma once

#include <cstdint>

#include "model/format/model_loader.h"
#include "model/tokenizer/tokenizer.h"
#include "server/core/chat_validation.h"
#include "textgen/v1/textgen.pb.h"

namespace textgen::server {

// Server limits a client should know (published in GetModelInfo).
struct PublishedLimits {
  int max_new_tokens_limit = 0;
  int max_batch_size = 0;
  int max_request_bytes = 0;
};

// Counts the weights' elements; a tied output projection is counted once.
uint64_t CountParameters(const model::ModelWeights& weights);

struct ModelInfoOptions {
  bool bf16 = false;               // the engine computes in bf16
  bool expose_model_path = false;  // --expose-model-path: publish the file's path
  PublishedLimits limits;
};

// What GetModelInfo (and the HTTP model lists) return for `model` with its chat templates:
// the one owner of every published field. Pure function.
v1::ModelInfo DescribeModel(const model::LoadedModel& model, const model::Tokenizer& tokenizer,
                            const ChatTemplates& chat_templates, const ModelInfoOptions& options);

}  // namespace textgen::server
