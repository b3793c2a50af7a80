#pragma once

#include <cstdint>
#include <vector>

namespace textgen::model::ops {

// Activation rows quantized to int8 for the integer dot products of quant_matmul.h, as
// llama.cpp does: one f32 scale per block of `block` elements (32 for the Q*_0/Q*_1 and Q8_0
// weights, like its Q8_0 activations; 256 for the K-quants, like Q8_K), q = round(x / scale)
// in [-127, 127] with scale = max|x| / 127. Each row is quantized on its own, so a row's codes
// never depend on the rest of the batch (batch invariance).
//
// The sums of the codes over every 16 elements are kept too: weights with an offset (Q4_0's
// "-8", the K-quants' minimums) need sum(q) per sub-block. Buffers grow to the largest call
// and are then reused. Not thread-safe.
class QuantizedActivations {
 public:
  // Quantizes x [rows, k] (row-major f32, k a multiple of `block`, block 32 or 256).
  void Quantize(const float* x, int rows, int k, int block);

  int rows() const { return rows_; }
  int k() const { return k_; }
  int block() const { return block_; }
  const int8_t* codes(int row) const { return codes_.data() + static_cast<int64_t>(row) * k_; }
  // [k / block] scales of `row`.
  const float* scales(int row) const {
    return scales_.data() + static_cast<int64_t>(row) * (k_ / block_);
  }
  // [k / 16] sums of the codes of `row`, each over 16 consecutive elements.
  const int32_t* sums16(int row) const {
    return sums16_.data() + static_cast<int64_t>(row) * (k_ / 16);
  }
  // [k / 64] pairs of 32-element sums as two int16 in one int32 (low half: the even sub-block),
  // the operand shape of VPDPWSSD.
  const int32_t* pair_sums(int row) const {
    return pair_sums_.data() + static_cast<int64_t>(row) * (k_ / 64);
  }

 private:
  int rows_ = 0, k_ = 0, block_ = 0;
  std::vector<int8_t> codes_;
  std::vector<float> scales_;
  std::vector<int32_t> sums16_;
  std::vector<int32_t> pair_sums_;
};

}  // namespace textgen::model::ops
