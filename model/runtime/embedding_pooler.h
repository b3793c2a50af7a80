#pragma once

#include <span>
#include <vector>

#include "model/arch/model_config.h"

namespace textgen::model {

// Pools one input's final hidden states into its embedding, as llama.cpp does: the mean of
// every token's (kMean), the first token's (kCls) or the last one's (kLast). Rows come in
// position order, in as many pieces as the input's prefill took; the sum runs in double, in
// that order, so the result does not depend on how the input was split or batched.
class EmbeddingPooler {
 public:
  explicit EmbeddingPooler(Pooling pooling) : pooling_(pooling) {}

  // The hidden states the pooling needs from a chunk of `rows` tokens starting at
  // `first_position`: all (mean; cls on the first chunk), the last (last), or none.
  bool WantsAll(int first_position) const;
  bool WantsLast() const { return pooling_ == Pooling::kLast; }
  // `hidden`: [rows, dim] for the rows asked for, the first at `first_position`.
  void Add(std::span<const float> hidden, int rows, int first_position);

  // The embedding: the first `dimensions` values (0: all; Matryoshka-style truncation),
  // L2-normalized when `normalize` (after truncation, as embedding APIs do).
  std::vector<float> Finish(int dimensions, bool normalize) const;

 private:
  Pooling pooling_;
  int dim_ = 0;  // from the first rows added
  std::vector<double> sum_;
  int count_ = 0;
};

}  // namespace textgen::model
