// textgen-bench-matmul [--benchmark_filter=...]: one Linear (x W^T) of the 110M model's
// shapes, oneDNN brgemm against the weight-streaming (skinny) kernel, for M = 1...128 rows,
// in f32 and bf16. Each benchmark cycles through enough copies of the weights to exceed the
// L3 cache, so the weights come from DRAM as in a real decode step. Reports weight GB/s and
// GFLOP/s; the crossover sets kDefaultSkinnyMaxRows.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/kernels/onednn_matmul.h"

namespace {

using textgen::model::ops::Linear;
using textgen::model::ops::LinearActivation;
using textgen::model::ops::OnednnContext;

constexpr int kMaxRows = 128;
constexpr int64_t kWeightBytesToCycle = int64_t{192} << 20;  // > L3 (32 MiB) several times

struct Shape {
  const char* name;
  int n, k;
};
constexpr Shape kShapes[] = {
    {"qkv", 2304, 768}, {"ffn_up", 4096, 768}, {"ffn_down", 768, 2048}, {"lm_head", 32000, 768}};

void BM_Linear(benchmark::State& state) {
  const Shape shape = kShapes[state.range(0)];
  const bool bf16 = state.range(1) != 0;
  const bool skinny = state.range(2) != 0;
  const int m = static_cast<int>(state.range(3));
  if (bf16 && !textgen::model::ops::CpuHasBf16()) {
    state.SkipWithError("CPU lacks AVX512-BF16");
    return;
  }
  auto ctx = OnednnContext::Create(0, bf16, kMaxRows, shape.k);
  if (!ctx.ok()) {
    state.SkipWithError(std::string(ctx.status().message()).c_str());
    return;
  }
  (*ctx)->set_skinny_max_rows(skinny ? kMaxRows : 0);

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  std::vector<float> w(static_cast<size_t>(shape.n) * shape.k);
  for (float& v : w) v = dist(rng);
  const int64_t bytes = static_cast<int64_t>(w.size()) * (bf16 ? 2 : 4);
  const int copies = static_cast<int>(std::max<int64_t>(1, kWeightBytesToCycle / bytes));
  std::vector<std::unique_ptr<Linear>> layers;
  for (int i = 0; i < copies; ++i) {
    auto layer = Linear::Create(**ctx, shape.name, w.data(), nullptr, shape.n, shape.k,
                                LinearActivation::kNone, kMaxRows);
    if (!layer.ok()) {
      state.SkipWithError(std::string(layer.status().message()).c_str());
      return;
    }
    if (skinny && !(*layer)->skinny_enabled()) {
      state.SkipWithError("skinny kernel unavailable (CPU or oneDNN layout)");
      return;
    }
    layers.push_back(std::move(*layer));
  }
  std::vector<float> x(static_cast<size_t>(m) * shape.k), y(static_cast<size_t>(m) * shape.n);
  for (float& v : x) v = dist(rng);
  size_t next = 0;
  for (auto _ : state) {
    if (!layers[next]->Run(x.data(), m, y.data()).ok()) state.SkipWithError("Run failed");
    benchmark::DoNotOptimize(y.data());
    next = (next + 1) % layers.size();
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(bytes) * iters / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * m * shape.n * static_cast<double>(shape.k) * iters / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(shape.name) + (bf16 ? " bf16 " : " f32 ") +
                 (skinny ? "skinny" : "onednn"));
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "bf16", "skinny", "m"});
  for (int s = 0; s < 4; ++s)
    for (int bf16 : {0, 1})
      for (int m : {1, 2, 4, 8, 16, 32, 64, 128})
        for (int skinny : {0, 1}) b->Args({s, bf16, skinny, m});
}

BENCHMARK(BM_Linear)->Apply(Args)->Unit(benchmark::kMicrosecond)->MinTime(0.3);

}  // namespace

BENCHMARK_MAIN();
