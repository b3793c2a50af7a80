// libFuzzer target: the llama2.c formats. Byte 0 picks what the rest is:
//   even: a checkpoint (config header + weights) through BuildModelFromLlama2c; every weight
//     view a successful load hands out is read in full, so ASan catches one outside the input.
//   odd: a tokenizer.bin of 512 or 32000 tokens (bit 1) through ParseLlama2cTokenizer; a
//     vocabulary that loads is built into a tokenizer and used to encode and decode.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/format/llama2c_loader.h"
#include "model/format/weights.h"
#include "model/tokenizer/llama2c_tokenizer_file.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/fuzz/touch_weights.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  if ((data[0] & 1) == 0) {
    if (auto model = textgen::model::BuildModelFromLlama2c(rest, "fuzz"); model.ok()) {
      textgen::fuzz::TouchAllWeights(*model);
    }
    return 0;
  }
  const int vocab_size = (data[0] & 2) != 0 ? 32000 : 512;
  auto vocabulary = textgen::model::ParseLlama2cTokenizer(
      std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size()), vocab_size,
      "fuzz");
  if (!vocabulary.ok()) return 0;
  auto tokenizer = textgen::model::CreateTokenizer(*std::move(vocabulary));
  if (!tokenizer.ok()) return 0;
  const std::vector<int> ids = (*tokenizer)->Encode("Once upon a time, 🙂 <s> x", true);
  (void)(*tokenizer)->Decode(ids);
  return 0;
}
