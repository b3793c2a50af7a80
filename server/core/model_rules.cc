#include "server/core/model_rules.h"

#include "model/arch/architectures.h"

namespace textgen::server {

model::Pooling EmbeddingPooling(const model::ModelConfig& config) {
  return config.pooling == model::Pooling::kNone ? model::Pooling::kLast : config.pooling;
}

void ApplyModelRules(const model::LoadedModel& model, int max_batch_tokens,
                     ValidationOptions& validation) {
  const model::ModelConfig& config = model.config;
  validation.context_length = config.context_length;
  validation.add_bos = model.tokenizer.add_bos;
  validation.add_eos = model.tokenizer.add_eos;
  validation.pooling = EmbeddingPooling(config);
  validation.embedding_dim = config.dim;
  validation.generates = !model::SpecOf(config.architecture).encoder;
  validation.model_name = config.name;
  validation.max_embedding_tokens = config.causal ? 0 : max_batch_tokens;
}

}  // namespace textgen::server
