#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/kernels/linear_layer.h"

namespace textgen::model::ops {

// Up to this many rows a Linear uses the weight-streaming kernel (skinny_matmul.h) instead
// of oneDNN's brgemm: measured crossover on Zen 4 with 2 threads (docs/engine-benchmarks.md).
inline constexpr int kDefaultSkinnyMaxRows = 16;

// oneDNN CPU engine + stream, the OpenMP thread count, the bf16 staging buffer and the
// memory holding the packed weights of all Linear layers (so it must outlive them).
// Engine thread only.
class OnednnContext {
 public:
  // `threads` > 0 sets the OpenMP pool size (0 keeps the default: all cores).
  // `max_rows` x `max_cols` bounds the activations converted to bf16 (bf16 only).
  static absl::StatusOr<std::unique_ptr<OnednnContext>> Create(int threads, bool bf16, int max_rows,
                                                               int max_cols);
  ~OnednnContext();

  bool bf16() const;
  int threads() const;
  // Row counts up to this use the weight-streaming kernel where it matches oneDNN (0: never).
  // Set before creating Linears; benchmarks and tests compare both paths with it.
  int skinny_max_rows() const;
  void set_skinny_max_rows(int rows);

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  explicit OnednnContext(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether this CPU runs oneDNN's bf16 matmul kernels natively (AVX512-BF16).
bool CpuHasBf16();

// y[M, N] = act(x[M, K] * W^T + b): a fully connected layer as a oneDNN matmul.
// W is given row-major [N, K] (nn.Linear layout), copied once into the blocked layout
// oneDNN picks (format_tag::any), as bf16 when the context is bf16. A fixed-M primitive is
// created the first time each M is seen (fixed M keeps the brgemm kernel, which computes
// every output row identically whatever M is: batch invariance) and kept for reuse.
// Few-row products (decode) run the weight-streaming kernel over the same packed weights
// when it reproduces oneDNN bitwise, which Create checks; otherwise oneDNN runs every M.
// Engine thread only.
class Linear : public LinearLayer {
 public:
  // `weight` is [n, k] row-major f32; `bias` is [n] or null. `name` is used in errors.
  static absl::StatusOr<std::unique_ptr<Linear>> Create(OnednnContext& context,
                                                        const std::string& name,
                                                        const float* weight, const float* bias,
                                                        int n, int k, LinearActivation act,
                                                        int max_rows);
  // Writes rows [begin, begin + count) of W ([n, k] row-major) to `out` (count * k values, f32
  // or bf16 as the Create call says).
  using WeightRows = std::function<void(int begin, int count, void* out)>;
  // The same from a source of rows, packed a block of rows at a time: no whole copy of W is
  // ever staged (the LM head of a large vocabulary is the largest matrix of a model). The
  // result is identical to packing the whole matrix at once.
  static absl::StatusOr<std::unique_ptr<Linear>> Create(OnednnContext& context,
                                                        const std::string& name,
                                                        const WeightRows& rows, bool rows_bf16,
                                                        const float* bias, int n, int k,
                                                        LinearActivation act, int max_rows);
  // The same from bf16 weights (round-to-nearest-even of the f32 ones: the packed copy is
  // then identical to the f32 overload's in a bf16 context, from half the staging memory).
  static absl::StatusOr<std::unique_ptr<Linear>> Create(OnednnContext& context,
                                                        const std::string& name,
                                                        const uint16_t* weight_bf16,
                                                        const float* bias, int n, int k,
                                                        LinearActivation act, int max_rows);
  ~Linear() override;

  // y[m, N] = act(x[m, K] W^T + b); x and y are dense row-major f32, 1 <= m <= max_rows.
  absl::Status Run(const float* x, int m, float* y) override;

  int n() const override;
  int k() const override;
  // The implementation that runs `m` rows ("skinny:avx512" or oneDNN's, e.g.
  // "brg:avx512_core"), for benchmarks and tests.
  absl::StatusOr<std::string> ImplementationName(int m) override;
  // Whether the weight-streaming kernel matched oneDNN at load and serves few-row calls.
  bool skinny_enabled() const;

  struct Impl;

 private:
  explicit Linear(std::unique_ptr<Impl> impl);
  // From `weight` (whole) when not null, else from `rows`.
  static absl::StatusOr<std::unique_ptr<Linear>> CreateFrom(
      OnednnContext& context, const std::string& name, const void* weight, const WeightRows* rows,
      bool weight_bf16, const float* bias, int n, int k, LinearActivation act, int max_rows);
  std::unique_ptr<Impl> impl_;
};

}  // namespace textgen::model::ops
