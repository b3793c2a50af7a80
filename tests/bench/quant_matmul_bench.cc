// textgen-bench-quant-matmul [--benchmark_filter=...]: the quantized kernels
// (model/kernels/quant/) on Llama-3.2-1B / 3.1-8B layer shapes, for M = 1...512 rows, next to
// the physical limits measured in the same run:
//   BM_ReadBandwidth   a plain AVX-512 read of 1 GiB on the OpenMP pool, prefetching 4 KiB
//                      ahead like the kernels (the DRAM limit that bounds decode: weight
//                      bytes / this = the fastest a token can be);
//   BM_Vnni            VPDPBUSD with no memory traffic (the int8 compute limit for prefill);
//   BM_OnednnInt8      the same shapes as a plain int8 product (u8 x s8 -> s32, no block
//                      scales) through oneDNN's matmul: how close to BM_Vnni a GEMM gets
//                      when VPDPBUSD is its only arithmetic (textgen-bench-vnni-ports shows
//                      what the quantized formats' scale arithmetic costs beside it); one copy
//                      of the weights, which 512 rows reuse from cache either way;
//   BM_ExpertDecode    a mixture-of-experts layer's products for one decode token in
//                      gpt-oss-20b's shape (4 of 32 MXFP4 experts, gate|up 5760 x 2880 then
//                      down 2880 x 2880, each one QuantMatmuls call), against the read limit.
// Each matmul benchmark but "in_l2" cycles through enough copies of the weights to exceed the
// L3 cache, so the weights come from DRAM as in a real decode step; "in_l2" shows what the
// kernel does when memory is not the limit. Reports weight GB/s (bytes of the
// packed matrix per call) and GOP/s (2 m n k per call); the activation quantization of each
// call is included.
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "dnnl.hpp"
#include "model/kernels/huge_page_arena.h"
#include "model/kernels/quant/packed_quant_matrix.h"
#include "model/kernels/quant/quant_matmul.h"
#include "model/kernels/quant/quantized_activations.h"
#include "tests/bench/read_probe.h"
#include "tests/tools/random_quant_blocks.h"

namespace {

using textgen::model::DType;
using namespace textgen::model::ops;

constexpr int64_t kWeightBytesToCycle = int64_t{256} << 20;  // > L3 (32 MiB) several times

struct Shape {
  const char* name;
  int n, k;
  bool from_dram = true;  // false: one copy that stays in L2 (the kernel's compute limit)
  int max_rows = 512;     // the most rows it runs in a step
};
// The LM head runs for a few rows per step; gpt-oss's attention shapes are here for decode.
constexpr Shape kShapes[] = {{"1b_qkv", 3072, 2048},
                             {"in_l2", 256, 2048, false},
                             {"1b_ffn_up", 16384, 2048},
                             {"1b_ffn_down", 2048, 8192},
                             {"1b_lm_head", 128256, 2048, true, 16},
                             {"8b_ffn_down", 4096, 14336},
                             {"oss_qkv", 5120, 2880, true, 1},
                             {"oss_o", 2880, 4096, true, 1}};
constexpr DType kTypes[] = {DType::kQ4_K, DType::kQ6_K, DType::kQ8_0,
                            DType::kQ5_K, DType::kQ4_0, DType::kMXFP4};

void BM_QuantMatmul(benchmark::State& state) {
  const Shape shape = kShapes[state.range(0)];
  const DType dtype = kTypes[state.range(1)];
  const int m = static_cast<int>(state.range(2));
  if (!CpuSupportsQuantMatmul()) {
    state.SkipWithError("CPU lacks AVX512-VNNI");
    return;
  }
  const std::vector<uint8_t> blocks =
      textgen::model::testing::RandomQuantBlocks(dtype, shape.n, shape.k, 7);
  const textgen::model::TensorView view{dtype, shape.n, shape.k, blocks.data()};
  HugePageArena arena;
  std::vector<PackedQuantMatrix> copies;
  int64_t bytes = 0;
  do {
    absl::StatusOr<PackedQuantMatrix> packed = PackQuantMatrix(view, arena);
    if (!packed.ok()) {
      state.SkipWithError(std::string(packed.status().message()).c_str());
      return;
    }
    bytes = packed->bytes();
    copies.push_back(*packed);
  } while (shape.from_dram && static_cast<int64_t>(copies.size()) * bytes < kWeightBytesToCycle);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m) * shape.k), y(static_cast<size_t>(m) * shape.n);
  for (float& v : x) v = dist(rng);
  QuantizedActivations activations;
  size_t next = 0;
  for (auto _ : state) {
    activations.Quantize(x.data(), m, shape.k, ActivationBlockFor(dtype));
    QuantMatmul(copies[next], activations, y.data(), shape.n);
    benchmark::DoNotOptimize(y.data());
    next = (next + 1) % copies.size();
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(bytes) * iters / 1e9, benchmark::Counter::kIsRate);
  state.counters["GOP/s"] = benchmark::Counter(
      2.0 * m * shape.n * static_cast<double>(shape.k) * iters / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(shape.name) + " " + textgen::model::DTypeName(dtype));
}

// One decode token through a mixture's experts: each iteration picks `used` distinct experts
// at random and runs their gate|up parts (one call, as the engine groups them), then their
// downs (a second call). The experts' weights together exceed L3 many times.
void BM_ExpertDecode(benchmark::State& state) {
  constexpr int kExperts = 32, kUsed = 4, kDim = 2880, kWidth = 2880;
  constexpr DType kType = DType::kMXFP4;
  if (!CpuSupportsQuantMatmul()) {
    state.SkipWithError("CPU lacks AVX512-VNNI");
    return;
  }
  HugePageArena arena;
  std::vector<PackedQuantMatrix> gate, up, down;
  const auto pack = [&](int n, int k, uint64_t seed, std::vector<PackedQuantMatrix>& to) {
    const std::vector<uint8_t> blocks =
        textgen::model::testing::RandomQuantBlocks(kType, n, k, seed);
    absl::StatusOr<PackedQuantMatrix> packed =
        PackQuantMatrix(textgen::model::TensorView{kType, n, k, blocks.data()}, arena);
    if (packed.ok()) to.push_back(*packed);
    return packed.ok();
  };
  for (int e = 0; e < kExperts; ++e) {
    if (!pack(kWidth, kDim, 3 * e, gate) || !pack(kWidth, kDim, 3 * e + 1, up) ||
        !pack(kDim, kWidth, 3 * e + 2, down)) {
      state.SkipWithError("cannot pack the experts");
      return;
    }
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(kDim), hidden(2 * kWidth * kUsed), out(kDim * kUsed);
  for (float& v : x) v = dist(rng);
  std::vector<QuantizedActivations> act(kUsed);
  QuantizedActivations in;
  std::array<int, kExperts> order;
  std::iota(order.begin(), order.end(), 0);
  std::vector<QuantMatmulJob> jobs;
  jobs.reserve(2 * kUsed);
  int64_t bytes = 0;
  for (auto _ : state) {
    std::shuffle(order.begin(), order.end(), rng);
    jobs.clear();
    in.Quantize(x.data(), 1, kDim, ActivationBlockFor(kType));
    for (int u = 0; u < kUsed; ++u) {
      const int e = order[u];
      float* y = hidden.data() + 2 * kWidth * u;
      jobs.push_back({&gate[e], &in, y, 2 * kWidth});
      jobs.push_back({&up[e], &in, y + kWidth, 2 * kWidth});
      bytes += gate[e].bytes() + up[e].bytes() + down[e].bytes();
    }
    QuantMatmuls(jobs);
    jobs.clear();
    for (int u = 0; u < kUsed; ++u) {
      // (the gate half stands in for the activation: only its bytes' traffic matters here)
      act[u].Quantize(hidden.data() + 2 * kWidth * u, 1, kWidth, ActivationBlockFor(kType));
      jobs.push_back({&down[order[u]], &act[u], out.data() + kDim * u, kDim});
    }
    QuantMatmuls(jobs);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(bytes) / 1e9, benchmark::Counter::kIsRate);
}

void BM_ReadBandwidth(benchmark::State& state) {
  absl::StatusOr<textgen::bench::ReadProbe> probe = textgen::bench::ReadProbe::Create();
  if (!probe.ok()) {
    state.SkipWithError("cannot map 1 GiB");
    return;
  }
  // Parts in turn, as Engine::ParallelFor hands them out (textgen-bench-engine --read-probe):
  // a core slowed by a neighbour does not hold the other at the end.
  const auto on_omp_pool = [](int n, absl::FunctionRef<void(int)> part) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < n; ++i) part(i);
  };
  for (auto _ : state) probe->ReadOnce(on_omp_pool);
  state.counters["GB/s"] = benchmark::Counter(
      static_cast<double>(probe->bytes()) * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void BM_Vnni(benchmark::State& state) {
  constexpr int64_t kSteps = 1 << 22;
  for (auto _ : state) {
    int32_t total = 0;
#pragma omp parallel reduction(+ : total)
    {
      __m512i acc[12];
      for (auto& a : acc) a = _mm512_set1_epi32(omp_get_thread_num());
      const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
      for (int64_t i = 0; i < kSteps; ++i) {
#pragma GCC unroll 12
        for (auto& a : acc) a = _mm512_dpbusd_epi32(a, u, s);
      }
      alignas(64) int32_t lanes[16];
      for (auto& a : acc) {
        _mm512_store_si512(lanes, a);
        total += lanes[0];
      }
    }
    benchmark::DoNotOptimize(total);
  }
  // 64 multiply-adds per VPDPBUSD: 128 ops.
  state.counters["GOP/s"] = benchmark::Counter(
      128.0 * 12 * kSteps * omp_get_max_threads() * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

void BM_OnednnInt8(benchmark::State& state) {
  const Shape shape = kShapes[state.range(0)];
  const int m = static_cast<int>(state.range(1));
  using dnnl::memory;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc src({m, shape.k}, memory::data_type::u8, memory::format_tag::ab);
  const memory::desc plain_weights({shape.k, shape.n}, memory::data_type::s8,
                                   memory::format_tag::ab);
  const memory::desc any_weights({shape.k, shape.n}, memory::data_type::s8,
                                 memory::format_tag::any);
  const memory::desc dst({m, shape.n}, memory::data_type::s32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc product(dnnl::matmul::desc(src, any_weights, dst), engine);
  memory x(src, engine), w_plain(plain_weights, engine), w(product.weights_desc(), engine),
      y(dst, engine);
  std::mt19937 rng(3);
  auto fill = [&](memory& mem, size_t size) {
    auto* bytes = static_cast<uint8_t*>(mem.get_data_handle());
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(rng());
  };
  fill(x, static_cast<size_t>(m) * shape.k);
  fill(w_plain, static_cast<size_t>(shape.k) * shape.n);
  dnnl::reorder(w_plain, w).execute(stream, w_plain, w);
  const dnnl::matmul matmul(product);
  for (auto _ : state) {
    matmul.execute(stream, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}});
    stream.wait();
  }
  state.counters["GOP/s"] = benchmark::Counter(2.0 * m * shape.n * static_cast<double>(shape.k) *
                                                   static_cast<double>(state.iterations()) / 1e9,
                                               benchmark::Counter::kIsRate);
  state.SetLabel(std::string(shape.name) + " " + product.impl_info_str());
}

// The activation quantization alone (every BM_QuantMatmul call includes one): m rows of k.
void BM_QuantizeActivations(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1));
  const int block = static_cast<int>(state.range(2));
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m) * k);
  for (float& v : x) v = dist(rng);
  QuantizedActivations activations;
  for (auto _ : state) {
    activations.Quantize(x.data(), m, k, block);
    benchmark::DoNotOptimize(activations.codes(0));
  }
  state.counters["GB/s"] = benchmark::Counter(
      4.0 * static_cast<double>(x.size()) * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int shape = 0; shape < static_cast<int>(std::size(kShapes)); ++shape) {
    for (int type = 0; type < static_cast<int>(std::size(kTypes)); ++type) {
      for (int m : {1, 4, 16, 64, 512}) {
        if (m > kShapes[shape].max_rows) continue;
        b->Args({shape, type, m});
      }
    }
  }
}

}  // namespace

BENCHMARK(BM_ReadBandwidth)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Vnni)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OnednnInt8)
    ->Args({0, 512})
    ->Args({3, 512})
    ->ArgNames({"shape", "m"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ExpertDecode)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QuantizeActivations)
    ->Args({512, 2048, 256})
    ->Args({512, 8192, 256})
    ->Args({512, 8192, 32})
    ->ArgNames({"m", "k", "block"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_QuantMatmul)
    ->Apply(Args)
    ->ArgNames({"shape", "type", "m"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

BENCHMARK_MAIN();
