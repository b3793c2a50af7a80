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
#include "tests/fuzz/touch_weights.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  if (auto file = textgen::model::ParseGguf(bytes); file.ok()) {
    for (const textgen::model::GgufTensorInfo& t : file->tensors) {
      // The reader promised this range is inside the input.
      volatile uint8_t last = file->TensorData(t)[t.nbytes - 1];
      (void)last;
    }
    if (auto model = textgen::model::BuildModelFromGguf(*file, "fuzz"); model.ok()) {
      textgen::fuzz::TouchAllWeights(*model);
    }
  }
  if (auto model = textgen::model::BuildModelFromLlama2c(bytes, "fuzz"); model.ok()) {
    textgen::fuzz::TouchAllWeights(*model);
  }
  return 0;
}
