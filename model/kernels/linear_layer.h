#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace textgen::model::ops {

// Activation applied to a Linear's output after the bias.
enum class LinearActivation { kNone, kGeluTanh };

// A fully connected layer y[m, n] = act(x[m, k] W^T + b) as the transformer runs it, whatever
// holds W: oneDNN-packed f32/bf16 (Linear) or quantized blocks (QuantizedLinear). Every
// implementation computes each output row the same way whatever m is (batch invariance).
// Engine thread only.
class LinearLayer {
 public:
  virtual ~LinearLayer() = default;
  // x and y are dense row-major f32, 1 <= m <= the max_rows given at creation.
  virtual absl::Status Run(const float* x, int m, float* y) = 0;
  virtual int n() const = 0;
  virtual int k() const = 0;
  // The kernel that runs `m` rows (e.g. "skinny:avx512", "brg:avx512_core", "vnni:Q4_K"),
  // for benchmarks and tests.
  virtual absl::StatusOr<std::string> ImplementationName(int m) = 0;
};

}  // namespace textgen::model::ops
