#include "model/runtime/embedding_pooler.h"

#include <cmath>

namespace textgen::model {

bool EmbeddingPooler::WantsAll(int first_position) const {
  return pooling_ == Pooling::kMean || (pooling_ == Pooling::kCls && first_position == 0);
}

void EmbeddingPooler::Add(std::span<const float> hidden, int rows, int first_position) {
  if (rows <= 0) return;
  if (sum_.empty()) {
    dim_ = static_cast<int>(hidden.size()) / rows;
    sum_.assign(static_cast<size_t>(dim_), 0.0);
  }
  for (int r = 0; r < rows; ++r) {
    const float* row = hidden.data() + static_cast<size_t>(r) * dim_;
    if (pooling_ == Pooling::kCls && first_position + r != 0) continue;
    if (pooling_ == Pooling::kLast) {
      // Each chunk hands over its last row; the input's last chunk's is the one kept.
      for (int i = 0; i < dim_; ++i) sum_[i] = row[i];
      count_ = 1;
      continue;
    }
    for (int i = 0; i < dim_; ++i) sum_[i] += row[i];
    ++count_;
  }
}

std::vector<float> EmbeddingPooler::Finish(int dimensions, bool normalize) const {
  if (count_ == 0) return {};
  const int n = dimensions > 0 && dimensions < dim_ ? dimensions : dim_;
  std::vector<double> values(sum_.begin(), sum_.begin() + n);
  if (count_ > 1) {
    for (double& v : values) v /= count_;
  }
  if (normalize) {
    double norm = 0;
    for (const double v : values) norm += v * v;
    norm = std::sqrt(norm);
    if (norm > 0) {
      for (double& v : values) v /= norm;
    }
  }
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace textgen::model
