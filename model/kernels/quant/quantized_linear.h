#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/format/weights.h"
#include "model/kernels/huge_page_arena.h"
#include "model/kernels/linear_layer.h"
#include "model/kernels/quant/packed_quant_matrix.h"
#include "model/kernels/quant/quantized_activations.h"

namespace textgen::model::ops {

// The activations of every quantized layer of one model, quantized once per layer call: one
// buffer per block size, shared because layers run one at a time. Engine thread only.
struct QuantScratch {
  QuantizedActivations block32;
  QuantizedActivations block256;
};

// y = act(x W^T + b) with W kept quantized (quant_matmul.h): W is the rows of `parts` one after
// another (wq | wk | wv, each in its own quant type, as Q4_K_M files mix Q4_K and Q6_K). One
// kernel for every row count, so results are batch-invariant. Engine thread only.
class QuantizedLinear : public LinearLayer {
 public:
  // Whether the kernels can run these parts here: the CPU has AVX512-VNNI and every part has a
  // packable quantized type (packed_quant_matrix.h) with the same, whole-block row length.
  static bool Supports(std::span<const TensorView* const> parts);

  // Packs the parts into `arena` (which must outlive the layer); `scratch` is shared by the
  // model's quantized layers and must outlive them too. `bias` is [n] or null.
  static absl::StatusOr<std::unique_ptr<QuantizedLinear>> Create(
      const std::string& name, std::span<const TensorView* const> parts, const float* bias,
      LinearActivation act, int max_rows, HugePageArena& arena, QuantScratch& scratch);

  absl::Status Run(const float* x, int m, float* y) override;

  // One layer's Run, for RunMany.
  struct Call {
    QuantizedLinear* layer;
    const float* x;
    int m;
    float* y;
  };
  // The calls in one parallel region (a mixture's experts: one fork and join for all, the weight
  // streams back to back), each output exactly what its Run gives. Call i's input is quantized
  // into scratch[i] (the shared scratch holds one layer's input at a time).
  static absl::Status RunMany(std::span<const Call> calls, std::span<QuantScratch> scratch);
  int n() const override { return n_; }
  int k() const override { return k_; }
  absl::StatusOr<std::string> ImplementationName(int m) override;

  // Bytes of the packed weights.
  int64_t weight_bytes() const;

 private:
  QuantizedLinear() = default;

  std::string name_;
  int n_ = 0, k_ = 0, max_rows_ = 0;
  LinearActivation act_ = LinearActivation::kNone;
  std::vector<PackedQuantMatrix> parts_;
  std::vector<float> bias_;  // [n] or empty
  QuantScratch* scratch_ = nullptr;
};

}  // namespace textgen::model::ops
