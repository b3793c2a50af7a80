#pragma once

namespace textgen::model::ops {

// Row-wise normalizations over dense [rows, dim] buffers (out may alias x). Each row is
// reduced by one thread in a fixed order, so a row's result does not depend on the batch.

// out = x / sqrt(mean(x^2) + eps) * weight
void RmsNorm(const float* x, int rows, int dim, const float* weight, float eps, float* out);

// out = (x - mean) / sqrt(var + eps) * weight + bias   (biased variance, as PyTorch)
void LayerNorm(const float* x, int rows, int dim, const float* weight, const float* bias, float eps,
               float* out);

}  // namespace textgen::model::ops
