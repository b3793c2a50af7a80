#pragma once

// For the model-format fuzzers: reads every weight view a successful load hands out, in full,
// so ASan catches a view that is not inside the input.
#include <vector>

#include "model/format/weights.h"

namespace textgen::fuzz {

inline void Touch(const model::TensorView& view, std::vector<float>& scratch) {
  if (view.empty()) return;
  scratch.resize(static_cast<size_t>(view.elements()));
  model::ToFloat(view, scratch.data());
}

inline void TouchAllWeights(const model::LoadedModel& loaded) {
  std::vector<float> scratch;
  const model::ModelWeights& w = loaded.weights;
  for (const auto* v : {&w.token_embedding, &w.position_embedding, &w.output_norm,
                        &w.output_norm_bias, &w.output}) {
    Touch(*v, scratch);
  }
  for (const model::LayerWeights& l : w.layers) {
    for (const auto* v :
         {&l.attn_norm, &l.attn_norm_bias, &l.wq, &l.wk, &l.wv, &l.bq, &l.bk, &l.bv, &l.wo, &l.bo,
          &l.ffn_norm, &l.ffn_norm_bias, &l.w_gate, &l.w_up, &l.b_up, &l.w_down, &l.b_down}) {
      Touch(*v, scratch);
    }
  }
}

}  // namespace textgen::fuzz
