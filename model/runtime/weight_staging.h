#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/format/weights.h"

namespace textgen::model {

// Gathers the tensors of one Linear (wq | wk | wv, say) into one [n, k] row-major buffer in
// the type the engine packs from: bf16 when it computes in bf16, f32 otherwise. bf16 staging
// halves the transient memory of loading (the LM head of a 128k vocabulary is 1 GiB in f32 at
// dim 2048), and quantized rows are dequantized a few at a time, so no whole f32 copy exists.
// After gathering, the storage is told the parts are done with (a file mapping drops their
// pages; the token embedding's rows, read a few per step, fault back in from the page cache).
// One buffer, reused: it grows to the largest Linear. Not thread-safe.
class WeightStaging {
 public:
  WeightStaging(bool bf16, const WeightStorage* storage) : bf16_(bf16), storage_(storage) {}

  // Stages the rows of `parts` one after another (all must have the same cols).
  void Gather(std::span<const TensorView* const> parts);

  // Writes the rows of `rows` to `out` in the staging type (f32, or bf16 rounded to nearest
  // even): the LM head is packed from blocks of rows this way, never staged whole.
  void ConvertRows(const TensorView& rows, void* out);

  // Frees the buffers (the next Gather allocates what it needs).
  void Release();

  bool bf16() const { return bf16_; }
  const float* f32_data() const { return staged_f32_.data(); }
  const uint16_t* bf16_data() const { return staged_bf16_.data(); }

 private:
  bool bf16_;
  const WeightStorage* storage_;
  std::vector<float> staged_f32_;      // the staged weights (f32), or one row chunk (bf16)
  std::vector<uint16_t> staged_bf16_;  // the staged weights (bf16)
};

}  // namespace textgen::model
