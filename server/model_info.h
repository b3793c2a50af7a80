#pragma once

#include <cstdint>

#include "model/format/model_loader.h"
#include "model/tokenizer/tokenizer.h"
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

// What GetModelInfo returns for `model`. `bf16` = the engine computes in bf16. Pure function.
v1::ModelInfo DescribeModel(const model::LoadedModel& model, const model::Tokenizer& tokenizer,
                            bool bf16, const PublishedLimits& limits);

}  // namespace textgen::server
