#include "model/runtime/weight_staging.h"

#include <algorithm>

#include "model/kernels/activations.h"

namespace textgen::model {
namespace {

// Rows dequantized at a time when staging bf16: enough for long sequential runs, small
// next to any weight matrix.
constexpr int64_t kChunkElements = int64_t{1} << 20;

}  // namespace

void WeightStaging::Gather(std::span<const TensorView* const> parts) {
  int64_t total = 0;
  for (const TensorView* p : parts) total += p->elements();
  if (bf16_) {
    staged_bf16_.resize(static_cast<size_t>(total));
  } else {
    staged_f32_.resize(static_cast<size_t>(total));
  }
  int64_t offset = 0;
  for (const TensorView* p : parts) {
    if (!bf16_) {
      ToFloat(*p, staged_f32_.data() + offset);
    } else {
      const int64_t chunk_rows = std::max<int64_t>(1, kChunkElements / p->cols);
      for (int64_t row = 0; row < p->rows; row += chunk_rows) {
        ConvertRows(RowsOf(*p, row, std::min(chunk_rows, p->rows - row)),
                    staged_bf16_.data() + offset + row * p->cols);
      }
    }
    offset += p->elements();
  }
  if (storage_ == nullptr) return;
  for (const TensorView* p : parts) storage_->DoneReading(p->data, ByteSize(*p));
}

void WeightStaging::ConvertRows(const TensorView& rows, void* out) {
  if (!bf16_) {
    ToFloat(rows, static_cast<float*>(out));
    return;
  }
  staged_f32_.resize(static_cast<size_t>(rows.elements()));
  ToFloat(rows, staged_f32_.data());
  ops::ConvertToBf16(staged_f32_.data(), rows.elements(), static_cast<uint16_t*>(out));
}

void WeightStaging::Release() {
  // (Assigning {} would keep the capacity.)
  std::vector<float>().swap(staged_f32_);
  std::vector<uint16_t>().swap(staged_bf16_);
}

}  // namespace textgen::model
