// libFuzzer target: arbitrary bytes through the GGUF reader, the GGUF model builder and the
// llama2.c builder. Every view a successful load hands out is read in full, so ASan catches
// any view that is not inside the input.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/format/gguf_model.h"
#include "model/format/gguf_reader.h"
#include "model/format/llama2c_loader.h"
#include "model/format/weights.h"

namespace {

void Touch(const textgen::model::TensorView& view, std::vector<float>& scratch) {
  if (view.empty()) return;
  scratch.resize(static_cast<size_t>(view.elements()));
  textgen::model::ToFloat(view, scratch.data());
}

void TouchAll(const textgen::model::LoadedModel& model) {
  std::vector<float> scratch;
  const textgen::model::ModelWeights& w = model.weights;
  for (const auto* v : {&w.token_embedding, &w.position_embedding, &w.output_norm,
                        &w.output_norm_bias, &w.output}) {
    Touch(*v, scratch);
  }
  for (const textgen::model::LayerWeights& l : w.layers) {
    for (const auto* v :
         {&l.attn_norm, &l.attn_norm_bias, &l.wq, &l.wk, &l.wv, &l.bq, &l.bk, &l.bv, &l.wo, &l.bo,
          &l.ffn_norm, &l.ffn_norm_bias, &l.w_gate, &l.w_up, &l.b_up, &l.w_down, &l.b_down}) {
      Touch(*v, scratch);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  if (auto file = textgen::model::ParseGguf(bytes); file.ok()) {
    for (const textgen::model::GgufTensorInfo& t : file->tensors) {
      // The reader promised this range is inside the input.
      volatile uint8_t last = file->TensorData(t)[t.nbytes - 1];
      (void)last;
    }
    if (auto model = textgen::model::BuildModelFromGguf(*file, "fuzz"); model.ok()) {
      TouchAll(*model);
    }
  }
  if (auto model = textgen::model::BuildModelFromLlama2c(bytes, "fuzz"); model.ok()) {
    TouchAll(*model);
  }
  return 0;
}
