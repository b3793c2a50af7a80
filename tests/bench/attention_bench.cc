// textgen-bench-attention: one decode step's attention (one query row per sequence, 12 heads
// of 64, 110M shape) for B sequences at context L, two ways:
//   paged:  ops::PagedAttention, the engine's kernel, reading K/V straight from cache blocks;
//   onednn: what the design first proposed: per sequence, gather K/V out of the blocks into
//           contiguous K^T [heads, 64, L] and V [heads, L, 64] tensors (plain copies, as
//           the cache keeps keys dimension-major), then oneDNN matmul (q K^T, scaled), softmax and
//           matmul (P V) primitives, created per L beforehand (a warm cache: the best case;
//           creating one costs 60-140 us, paid at every new L in a real server).
// The only file outside model/kernels that uses oneDNN directly: it measures the alternative.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <random>
#include <unordered_map>
#include <vector>

#include "model/kernels/attention.h"
#include "model/kernels/huge_page_arena.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

using textgen::model::ops::AttentionChunk;
using textgen::model::ops::PagedKvLayout;

constexpr int kHeads = 12, kHeadDim = 64, kBlockTokens = 16;
constexpr int kQDim = kHeads * kHeadDim;

// B sequences of L cached tokens in paged blocks (one layer), and one query row each (or, with
// `prefill`, all L rows of each); n_heads query heads (12 by default) of head_dim (64 by
// default; 256 as Gemma has) over n_kv KV heads (as many by default; fewer: GQA).
struct Setup {
  Setup(int batch, int length, int head_dim = kHeadDim, int n_kv = kHeads, bool prefill = false,
        int n_heads = kHeads)
      : batch(batch), length(length), head_dim(head_dim) {
    layout = PagedKvLayout{.block_tokens = kBlockTokens,
                           .n_kv_heads = n_kv,
                           .head_dim = head_dim,
                           .k_offset = 0,
                           .v_offset = int64_t{n_kv} * kBlockTokens * head_dim,
                           .head_stride = int64_t{kBlockTokens} * head_dim};
    const int blocks_per_seq = (length + kBlockTokens - 1) / kBlockTokens;
    const size_t block_floats = size_t{2} * n_kv * kBlockTokens * head_dim;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    // Blocks come from huge pages as in the engine's KV cache (with 4 KiB pages every
    // slab would also be a TLB miss, which the engine does not pay).
    storage.resize(static_cast<size_t>(batch) * blocks_per_seq);
    tables.resize(batch);
    for (float*& block : storage) {
      block = static_cast<float*>(arena.Allocate(block_floats * sizeof(float)).value());
      for (size_t i = 0; i < block_floats; ++i) block[i] = dist(rng);
    }
    for (int s = 0; s < batch; ++s) {
      for (int b = 0; b < blocks_per_seq; ++b) {
        tables[s].push_back(
            reinterpret_cast<std::byte*>(storage[static_cast<size_t>(s) * blocks_per_seq + b]));
      }
      chunks.push_back(prefill ? AttentionChunk{tables[s].data(), 0, length, s * length}
                               : AttentionChunk{tables[s].data(), length - 1, 1, s});
    }
    rows = prefill ? batch * length : batch;
    q.resize(static_cast<size_t>(rows) * n_heads * head_dim);
    for (float& x : q) x = dist(rng);
    out.resize(q.size());
    scores.resize(static_cast<size_t>(textgen::model::ops::AttentionScratchFloats(8, length)));
  }
  int batch, length, head_dim, rows = 0;
  PagedKvLayout layout;
  textgen::model::ops::HugePageArena arena;
  std::vector<float*> storage;
  std::vector<std::vector<std::byte*>> tables;
  std::vector<AttentionChunk> chunks;
  std::vector<float> q, out, scores;
};

void BM_PagedAttention(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  for (auto _ : state) {
    textgen::model::ops::PagedAttention(s.chunks, s.layout, kHeads, s.q.data(), kQDim, s.out.data(),
                                        kQDim, s.scores.data(), s.length);
    benchmark::DoNotOptimize(s.out.data());
  }
  state.SetItemsProcessed(state.iterations() * s.batch);
}

void BM_OnednnAttention(benchmark::State& state) {
  using dnnl::memory;
  using Dt = memory::data_type;
  using Tag = memory::format_tag;
  Setup s(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const int64_t L = s.length;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  // scores[h, 1, L] = q[h, 1, d] x K^T[h, d, L] * scale.
  const memory::desc q_md({kHeads, 1, kHeadDim}, Dt::f32, Tag::abc);
  const memory::desc kt_md({kHeads, kHeadDim, L}, Dt::f32, Tag::abc);
  const memory::desc s_md({kHeads, 1, L}, Dt::f32, Tag::abc);
  const memory::desc v_md({kHeads, L, kHeadDim}, Dt::f32, Tag::abc);
  const memory::desc o_md({kHeads, 1, kHeadDim}, Dt::f32, Tag::abc);
  dnnl::primitive_attr scale_attr;
  scale_attr.set_output_scales(0, {1.0f / std::sqrt(static_cast<float>(kHeadDim))});
  dnnl::matmul qk(
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(q_md, kt_md, s_md), scale_attr, engine));
  dnnl::softmax_forward softmax(dnnl::softmax_forward::primitive_desc(
      dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, s_md, 2), engine));
  dnnl::matmul pv(dnnl::matmul::primitive_desc(dnnl::matmul::desc(s_md, v_md, o_md), engine));

  std::vector<float> kt(static_cast<size_t>(kHeads) * L * kHeadDim), v(kt.size());
  std::vector<float> sc(static_cast<size_t>(kHeads) * L), qh(kQDim), oh(kQDim);
  memory q_m(q_md, engine, qh.data()), kt_m(kt_md, engine, kt.data()), s_m(s_md, engine, sc.data()),
      v_m(v_md, engine, v.data()), o_m(o_md, engine, oh.data());
  for (auto _ : state) {
    for (int seq = 0; seq < s.batch; ++seq) {
      // Gather this sequence's K/V out of its blocks, head-major.
      for (int64_t j = 0; j < L; j += kBlockTokens) {
        const auto* block = reinterpret_cast<const float*>(s.tables[seq][j / kBlockTokens]);
        const int64_t n = std::min<int64_t>(kBlockTokens, L - j);
        for (int h = 0; h < kHeads; ++h) {
          // Keys are dimension-major in a block: gather them straight into K^T [h, d, L].
          const float* slab = block + s.layout.k_offset + h * s.layout.head_stride;
          for (int d = 0; d < kHeadDim; ++d) {
            std::memcpy(&kt[(h * kHeadDim + d) * L + j], slab + d * kBlockTokens,
                        sizeof(float) * n);
          }
          std::memcpy(&v[(h * L + j) * kHeadDim],
                      block + s.layout.v_offset + h * s.layout.head_stride,
                      sizeof(float) * n * kHeadDim);
        }
      }
      std::memcpy(qh.data(), s.q.data() + static_cast<size_t>(seq) * kQDim, sizeof(float) * kQDim);
      qk.execute(stream, {{DNNL_ARG_SRC, q_m}, {DNNL_ARG_WEIGHTS, kt_m}, {DNNL_ARG_DST, s_m}});
      softmax.execute(stream, {{DNNL_ARG_SRC, s_m}, {DNNL_ARG_DST, s_m}});
      pv.execute(stream, {{DNNL_ARG_SRC, s_m}, {DNNL_ARG_WEIGHTS, v_m}, {DNNL_ARG_DST, o_m}});
      stream.wait();
      std::memcpy(s.out.data() + static_cast<size_t>(seq) * kQDim, oh.data(),
                  sizeof(float) * kQDim);
    }
    benchmark::DoNotOptimize(s.out.data());
  }
  state.SetItemsProcessed(state.iterations() * s.batch);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "context"});
  for (int batch : {1, 16, 64})
    for (int context : {192, 1024}) b->Args({batch, context});
}

// Head size as an argument: 64, 128 (the AVX-512 kernel's range before), 256 (Gemma).
void BM_PagedAttentionHeadDim(benchmark::State& state) {
  const int head_dim = static_cast<int>(state.range(2));
  Setup s(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), head_dim);
  const int q_dim = kHeads * head_dim;
  for (auto _ : state) {
    textgen::model::ops::PagedAttention(s.chunks, s.layout, kHeads, s.q.data(), q_dim, s.out.data(),
                                        q_dim, s.scores.data(), s.length);
    benchmark::DoNotOptimize(s.out.data());
  }
  state.SetItemsProcessed(state.iterations() * s.batch);
}

// GQA as Llama 3.2 1B has it (4 query heads per KV head; 12 query heads, or the model's 32),
// decode (one row per sequence) and prefill (every row of one sequence).
void BM_PagedAttentionGqa(benchmark::State& state) {
  const bool prefill = state.range(2) != 0;
  const int heads = static_cast<int>(state.range(3));
  Setup s(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), kHeadDim, heads / 4,
          prefill, heads);
  const int q_dim = heads * kHeadDim;
  for (auto _ : state) {
    textgen::model::ops::PagedAttention(s.chunks, s.layout, heads, s.q.data(), q_dim, s.out.data(),
                                        q_dim, s.scores.data(), s.length);
    benchmark::DoNotOptimize(s.out.data());
  }
  state.SetItemsProcessed(state.iterations() * s.rows);
}

BENCHMARK(BM_PagedAttention)->Apply(Args)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PagedAttentionGqa)
    ->ArgNames({"batch", "context", "prefill", "heads"})
    ->Args({1, 4096, 0, 12})
    ->Args({16, 1024, 0, 12})
    ->Args({1, 512, 1, 12})
    ->Args({1, 512, 1, 32})
    ->Args({1, 2048, 1, 32})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PagedAttentionHeadDim)
    ->ArgNames({"batch", "context", "head_dim"})
    ->ArgsProduct({{1, 16}, {1024}, {128, 192, 256}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OnednnAttention)->Apply(Args)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
