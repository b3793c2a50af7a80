#pragma once

#include "model/format/model_loader.h"
#include "server/core/validation.h"

namespace textgen::server {

// How a loaded model embeds: the file's pooling, or, for a generative model (whose files name
// none), the state of its last token.
model::Pooling EmbeddingPooling(const model::ModelConfig& config);

// What requests may ask of `model`, read off the file: its context, BOS and EOS framing,
// pooling and width, whether it generates at all (an encoder only embeds), and, for a
// bidirectional encoder, which sees an input whole in one forward pass, the longest input
// (`max_batch_tokens`, --max-batch-tokens). The one owner of these rules for every front end;
// the operator's limits in `validation` are left as they are.
void ApplyModelRules(const model::LoadedModel& model, int max_batch_tokens,
                     ValidationOptions& validation);

}  // namespace textgen::server
