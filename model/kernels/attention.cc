#include "model/kernels/attention.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "model/format/float16.h"
#include "model/kernels/cpu_features.h"
#include "model/kernels/fast_math.h"
#include "model/kernels/simd.h"

namespace textgen::model::ops {
namespace {

// Turns raw scores [0, n_pos) into probabilities divided by their sum (in place); a sink logit
// (null: none) counts in the sum without a score of its own. Cloned for AVX-512: without it the
// exp has no vector floor (SSE2) and runs scalar.
TEXTGEN_SIMD_CLONES void Softmax(float* scores, int n_pos, float max_score, const float* sink) {
  if (sink != nullptr) max_score = std::max(max_score, *sink);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < n_pos; ++j) {
    scores[j] = FastExp(scores[j] - max_score);
    sum += scores[j];
  }
  if (sink != nullptr) sum += FastExp(*sink - max_score);
  const float inv_sum = 1.0f / sum;
#pragma omp simd
  for (int j = 0; j < n_pos; ++j) scores[j] *= inv_sum;
}

// sum q[d] * k[d * stride] and out[d] += p * v[d], for f32 and half caches. Only the f32
// forms can vectorize (the half ones widen element by element).
#define TEXTGEN_INLINE __attribute__((always_inline)) inline
TEXTGEN_INLINE float DotStrided(const float* q, const float* k, int n, int stride) {
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (int d = 0; d < n; ++d) dot += q[d] * k[d * stride];
  return dot;
}
TEXTGEN_INLINE float DotStrided(const float* q, const uint16_t* k, int n, int stride) {
  float dot = 0.0f;
  for (int d = 0; d < n; ++d) dot += q[d] * HalfToFloat(k[d * stride]);
  return dot;
}
TEXTGEN_INLINE void AddScaled(float p, const float* v, int n, float* out) {
#pragma omp simd
  for (int d = 0; d < n; ++d) out[d] += p * v[d];
}
TEXTGEN_INLINE void AddScaled(float p, const uint16_t* v, int n, float* out) {
  for (int d = 0; d < n; ++d) out[d] += p * HalfToFloat(v[d]);
}

// Positions [first, n_pos) of one query row, and how their scores are made.
struct RowSpan {
  int first = 0;
  int n_pos = 0;
  float scale = 1.0f;
  float softcap = 0.0f;
  const float* sinks = nullptr;  // the sink logit of each head attended, or null
};

const float* SinkOf(const RowSpan& span, int head) {
  return span.sinks == nullptr ? nullptr : span.sinks + head;
}

// softcap * tanh(s / softcap) over scores [first, n_pos); returns their new maximum.
float CapScores(float* scores, const RowSpan& span) {
  const float inv = 1.0f / span.softcap;
  float max_score = -INFINITY;
  for (int j = span.first; j < span.n_pos; ++j) {
    scores[j] = span.softcap * std::tanh(scores[j] * inv);
    max_score = std::max(max_score, scores[j]);
  }
  return max_score;
}

// One query row and head over positions [first, n_pos), K/V read straight from the blocks as
// elements of type T (float, or IEEE half as uint16_t). The portable kernel.
template <typename T>
TEXTGEN_INLINE void AttendRowPortable(const float* q, std::byte* const* blocks,
                                      const PagedKvLayout& layout, int64_t k_base, int64_t v_base,
                                      const RowSpan& span, float* scores, float* out) {
  const int hd = layout.head_dim;
  const int bt = layout.block_tokens;
  float max_score = -INFINITY;
  for (int j = span.first; j < span.n_pos; ++j) {
    // K is stored dimension-major: element d of slot s at d * bt + s.
    const T* k = reinterpret_cast<const T*>(blocks[j / bt]) + k_base + (j % bt);
    scores[j] = DotStrided(q, k, hd, bt) * span.scale;
    max_score = std::max(max_score, scores[j]);
  }
  if (span.softcap > 0) max_score = CapScores(scores, span);
  Softmax(scores + span.first, span.n_pos - span.first, max_score, SinkOf(span, 0));
  for (int d = 0; d < hd; ++d) out[d] = 0.0f;
  for (int j = span.first; j < span.n_pos; ++j) {
    const T* v = reinterpret_cast<const T*>(blocks[j / bt]) + v_base + (j % bt) * hd;
    AddScaled(scores[j], v, hd, out);
  }
}

TEXTGEN_SIMD_CLONES void AttendRow(const float* q, std::byte* const* blocks,
                                   const PagedKvLayout& layout, int64_t k_base, int64_t v_base,
                                   const RowSpan& span, float* scores, float* out) {
  AttendRowPortable<float>(q, blocks, layout, k_base, v_base, span, scores, out);
}

// For CPUs without AVX-512 and an f16 cache: widens element by element.
void AttendRowHalf(const float* q, std::byte* const* blocks, const PagedKvLayout& layout,
                   int64_t k_base, int64_t v_base, const RowSpan& span, float* scores, float* out) {
  AttendRowPortable<uint16_t>(q, blocks, layout, k_base, v_base, span, scores, out);
}

#define TEXTGEN_AVX512 __attribute__((target("avx512f")))

// 16 cache elements from `base` + `index` (elements of the cache type) as f32.
template <bool kHalf>
TEXTGEN_AVX512 inline __m512 Load16(const std::byte* base, int64_t index) {
  if constexpr (kHalf) {
    // (maskz forms: GCC 12's unmasked ones trip -Wmaybe-uninitialized in its headers)
    return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                             reinterpret_cast<const uint16_t*>(base) + index)));
  } else {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(base) + index);
  }
}

// Asks for the cache line holding element `index` of a block, into L2.
template <bool kHalf>
TEXTGEN_AVX512 inline void PrefetchElement(const std::byte* base, int64_t index) {
  _mm_prefetch(reinterpret_cast<const char*>(base + index * (kHalf ? 2 : 4)), _MM_HINT_T1);
}

// Heads of one KV group attended in one pass: each key load serves all of them (GQA models
// have 2-8 query heads per KV head). Four keep 16 score accumulators in registers.
constexpr int kMaxHeadsPerPass = 4;

// The scores of HG heads (queries at q + h * 16 * NV) over positions [span.first, n_pos) for
// head_dim = 16 * NV and 16-token blocks, into scores + h * scores_stride; max_score[h] gets
// each head's maximum. K is dimension-major in a block, so one zmm holds a dimension of all 16
// keys: a block's 16 scores come out of hd FMAs per head (four chains, combined in a fixed
// order) with no horizontal sums. Each head's operations are the same whatever HG is.
template <int NV, bool kHalf, int HG>
TEXTGEN_AVX512 void ScoreKeysAvx512(const float* q, std::byte* const* blocks, int64_t k_base,
                                    int64_t v_base, const RowSpan& span, float* scores,
                                    int scores_stride, float (&max_score)[kMaxHeadsPerPass]) {
  constexpr int hd = 16 * NV;
  constexpr int bt = 16;  // PickAttendHeads checks the layout
  const int first = span.first;
  const int n_pos = span.n_pos;
  const int first_block_start = first / bt * bt;
  const __m512 scale_v = _mm512_set1_ps(span.scale);
  __m512 max_v[HG];
  for (__m512& m : max_v) m = _mm512_set1_ps(-INFINITY);
  for (int j0 = first_block_start; j0 < n_pos; j0 += bt) {
    const std::byte* block = blocks[j0 / bt];
    // Blocks are scattered 4 KiB slabs, too short for the hardware prefetcher to follow, so
    // while this block's keys are scored, the keys two blocks ahead and this block's values
    // (read after the softmax) are requested: the loads overlap instead of queueing.
    // textgen-bench-attention: 0.63-0.69x the time at 16-64 sequences.
    const std::byte* ahead = j0 + 2 * bt < n_pos ? blocks[j0 / bt + 2] : block;
    if (j0 == first_block_start && j0 + bt < n_pos) {
      for (int d = 0; d < hd; ++d) {
        PrefetchElement<kHalf>(blocks[j0 / bt + 1], k_base + int64_t{d} * bt);
      }
    }
    __m512 acc[HG][4];
    for (auto& head : acc)
      for (__m512& a : head) a = _mm512_setzero_ps();
    for (int d = 0; d < hd; d += 4) {
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        // A dimension row of the K slab and a 16-element stretch of the V slab are each at
        // most one cache line.
        PrefetchElement<kHalf>(ahead, k_base + int64_t{d + c} * bt);
        PrefetchElement<kHalf>(block, v_base + int64_t{d + c} * bt);
        const __m512 k = Load16<kHalf>(block, k_base + int64_t{d + c} * bt);
#pragma GCC unroll 4
        for (int h = 0; h < HG; ++h) {
          acc[h][c] = _mm512_fmadd_ps(_mm512_set1_ps(q[h * hd + d + c]), k, acc[h][c]);
        }
      }
    }
    // Slots past the sequence's end hold stale data, slots before the window are not seen:
    // neither stored nor counted.
    const int count = std::min(bt, n_pos - j0);
    const int skip = std::max(0, first - j0);
    const __mmask16 live = static_cast<__mmask16>(((1u << count) - 1) & ~((1u << skip) - 1));
    for (int h = 0; h < HG; ++h) {
      const __m512 s = _mm512_mul_ps(
          _mm512_add_ps(_mm512_add_ps(acc[h][0], acc[h][1]), _mm512_add_ps(acc[h][2], acc[h][3])),
          scale_v);
      _mm512_mask_storeu_ps(scores + h * scores_stride + j0, live, s);
      max_v[h] = _mm512_mask_max_ps(max_v[h], live, max_v[h], s);
    }
  }
  for (int h = 0; h < HG; ++h) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, max_v[h]);
    max_score[h] = *std::max_element(lanes, lanes + 16);
  }
}

// out + h * hd = sum over positions [span.first, n_pos) of p_hj * v_j for the HG heads of a KV
// group (head h's probabilities p_h at scores + h * scores_stride; 16-token blocks, head_dim =
// 16 * NV), in passes over slices of 16 dimensions: each value line read serves every head
// (head by head, the group's values streamed from L2 once per head: half a 512-token
// prefill's attention time). Up to 128 dims two accumulator sets (even/odd positions) hide the
// FMA latency; wider heads (Gemma's 256) keep one. An output element gets the same FMAs in the
// same order whatever HG is, so a head's result is bitwise the same alone or in a group.
template <int NV, bool kHalf, int HG, int V0 = 0>
TEXTGEN_AVX512 void AddValuesAvx512(std::byte* const* blocks, int64_t v_base, const RowSpan& span,
                                    const float* scores, int scores_stride, float* out) {
  constexpr int hd = 16 * NV;
  constexpr int bt = 16;
  constexpr bool kTwoSets = NV <= 8;
  constexpr int kSets = kTwoSets ? 2 : 1;
  // Slices per pass: at most 16 accumulators, which leaves registers for the value slices (a
  // slice's loads are shared between the heads; with one head they fold into its FMAs).
  constexpr int kSlices = std::min(NV - V0, std::max(1, 16 / (HG * kSets)));
  const int first = span.first;
  const int n_pos = span.n_pos;
  __m512 even[HG][kSlices], odd[HG][kTwoSets ? kSlices : 1];
  for (auto& head : even)
    for (__m512& acc : head) acc = _mm512_setzero_ps();
  for (auto& head : odd)
    for (__m512& acc : head) acc = _mm512_setzero_ps();
  const auto p = [&](int h, int j)
                     TEXTGEN_AVX512 { return _mm512_set1_ps(scores[h * scores_stride + j]); };
  for (int j0 = first / bt * bt; j0 < n_pos; j0 += bt) {
    const std::byte* block = blocks[j0 / bt];
    const int count = std::min(bt, n_pos - j0);
    int t = std::max(0, first - j0);
    const auto slice = [&](int pos, int s) TEXTGEN_AVX512 {
      return Load16<kHalf>(block, v_base + int64_t{pos} * hd + 16 * (V0 + s));
    };
    if constexpr (kTwoSets) {
      for (; t + 2 <= count; t += 2) {
        for (int h = 0; h < HG; ++h) {
          const __m512 p0 = p(h, j0 + t), p1 = p(h, j0 + t + 1);
          for (int s = 0; s < kSlices; ++s) {
            even[h][s] = _mm512_fmadd_ps(p0, slice(t, s), even[h][s]);
            odd[h][s] = _mm512_fmadd_ps(p1, slice(t + 1, s), odd[h][s]);
          }
        }
      }
    }
    for (; t < count; ++t) {
      for (int h = 0; h < HG; ++h) {
        const __m512 p0 = p(h, j0 + t);
        for (int s = 0; s < kSlices; ++s) {
          even[h][s] = _mm512_fmadd_ps(p0, slice(t, s), even[h][s]);
        }
      }
    }
  }
  for (int h = 0; h < HG; ++h) {
    for (int s = 0; s < kSlices; ++s) {
      float* at = out + h * hd + 16 * (V0 + s);
      if constexpr (kTwoSets) {
        _mm512_storeu_ps(at, _mm512_add_ps(even[h][s], odd[h][s]));
      } else {
        _mm512_storeu_ps(at, even[h][s]);
      }
    }
  }
  if constexpr (V0 + kSlices < NV) {
    AddValuesAvx512<NV, kHalf, HG, V0 + kSlices>(blocks, v_base, span, scores, scores_stride, out);
  }
}

// HG heads of one row that share a KV head (queries at q + h * hd, outputs at out + h * hd)
// on AVX-512: their keys scored in one pass, each head's softmax, their values in one pass.
template <int NV, bool kHalf, int HG>
TEXTGEN_AVX512 void AttendHeadsAvx512(const float* q, std::byte* const* blocks,
                                      const PagedKvLayout& layout, int64_t k_base, int64_t v_base,
                                      const RowSpan& span, float* scores, int scores_stride,
                                      float* out) {
  float max_score[kMaxHeadsPerPass];
  ScoreKeysAvx512<NV, kHalf, HG>(q, blocks, k_base, v_base, span, scores, scores_stride, max_score);
  for (int h = 0; h < HG; ++h) {
    float* head_scores = scores + h * scores_stride;
    if (span.softcap > 0) max_score[h] = CapScores(head_scores, span);
    Softmax(head_scores + span.first, span.n_pos - span.first, max_score[h], SinkOf(span, h));
  }
  AddValuesAvx512<NV, kHalf, HG>(blocks, v_base, span, scores, scores_stride, out);
}

// HG heads of one row that share a KV head, one at a time, with the portable kernel.
using AttendRowFn = void (*)(const float*, std::byte* const*, const PagedKvLayout&, int64_t,
                             int64_t, const RowSpan&, float*, float*);
template <AttendRowFn kAttendRow, int HG>
void AttendHeadsPortable(const float* q, std::byte* const* blocks, const PagedKvLayout& layout,
                         int64_t k_base, int64_t v_base, const RowSpan& span, float* scores,
                         int scores_stride, float* out) {
  for (int h = 0; h < HG; ++h) {
    RowSpan head_span = span;
    head_span.sinks = SinkOf(span, h);
    kAttendRow(q + h * layout.head_dim, blocks, layout, k_base, v_base, head_span, scores,
               out + h * layout.head_dim);
  }
}

using AttendHeadsFn = void (*)(const float*, std::byte* const*, const PagedKvLayout&, int64_t,
                               int64_t, const RowSpan&, float*, int, float*);
using HeadsTable = std::array<AttendHeadsFn, kMaxHeadsPerPass>;

template <int NV, bool kHalf>
constexpr HeadsTable AvxHeads() {
  return {AttendHeadsAvx512<NV, kHalf, 1>, AttendHeadsAvx512<NV, kHalf, 2>,
          AttendHeadsAvx512<NV, kHalf, 3>, AttendHeadsAvx512<NV, kHalf, 4>};
}
template <AttendRowFn kAttendRow>
constexpr HeadsTable PortableHeads() {
  return {AttendHeadsPortable<kAttendRow, 1>, AttendHeadsPortable<kAttendRow, 2>,
          AttendHeadsPortable<kAttendRow, 3>, AttendHeadsPortable<kAttendRow, 4>};
}

// One table per head size 16, 32, ..., 256.
template <bool kHalf, int... NV>
HeadsTable PickAvx512(int head_dim, std::integer_sequence<int, NV...>) {
  static constexpr HeadsTable kByHeadDim[] = {AvxHeads<NV + 1, kHalf>()...};
  return kByHeadDim[head_dim / 16 - 1];  // PickAttendHeads checks 16 <= head_dim <= 256
}

// The AVX-512 kernels for what they cover (head sizes multiples of 16 up to 256, 16-token
// blocks), else the portable ones. The choice depends on the CPU and model, never the batch.
HeadsTable PickAttendHeads(int head_dim, int block_tokens, bool f16) {
  if (head_dim % 16 != 0 || head_dim < 16 || head_dim > 256 || block_tokens != 16 ||
      !CpuHasAvx512()) {
    return f16 ? PortableHeads<AttendRowHalf>() : PortableHeads<AttendRow>();
  }
  constexpr auto kSizes = std::make_integer_sequence<int, 16>{};
  return f16 ? PickAvx512<true>(head_dim, kSizes) : PickAvx512<false>(head_dim, kSizes);
}

// Rounds n floats to half, nearest-even (the same rounding as FloatToHalf).
TEXTGEN_AVX512 void ToHalfAvx512(const float* x, int n, uint16_t* out) {
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(out + i),
        _mm512_maskz_cvtps_ph(0xFFFF, _mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = FloatToHalf(x[i]);
}

void ToHalf(const float* x, int n, uint16_t* out, bool avx512) {
  if (avx512) {
    ToHalfAvx512(x, n, out);
    return;
  }
  for (int i = 0; i < n; ++i) out[i] = FloatToHalf(x[i]);
}

}  // namespace

void StoreKv(std::span<const AttentionChunk> chunks, const PagedKvLayout& layout, const float* k,
             const float* v, int stride) {
  const int hd = layout.head_dim;
  const int bt = layout.block_tokens;
  const bool avx512 = layout.f16 && CpuHasAvx512();
  const int n_chunks = static_cast<int>(chunks.size());
  // Sequences write disjoint slots. Serial, this was 1.5-2% of a 64-stream step with the
  // other thread waiting.
#pragma omp parallel for schedule(dynamic, 4) if (n_chunks >= 8)
  for (int i = 0; i < n_chunks; ++i) {
    const AttentionChunk& chunk = chunks[i];
    for (int t = 0; t < chunk.n_tokens; ++t) {
      const int pos = chunk.start_pos + t;
      std::byte* block = chunk.blocks[pos / bt];
      const int slot = pos % bt;
      const int64_t row = static_cast<int64_t>(chunk.first_row + t) * stride;
      for (int g = 0; g < layout.n_kv_heads; ++g) {
        // K dimension-major ([hd][bt]: element d of this slot at d * bt + slot), V token-major.
        const int64_t k_at = layout.k_offset + g * layout.head_stride + slot;
        const int64_t v_at = layout.v_offset + g * layout.head_stride + int64_t{slot} * hd;
        const float* k_row = k + row + g * hd;
        if (layout.f16) {
          auto* half = reinterpret_cast<uint16_t*>(block);
          // Rounded 16 at a time on the stack, then spread down the dimension-major slab.
          for (int d0 = 0; d0 < hd; d0 += 16) {
            uint16_t rounded[16];
            const int n = std::min(16, hd - d0);
            ToHalf(k_row + d0, n, rounded, avx512);
            for (int d = 0; d < n; ++d) half[k_at + int64_t{d0 + d} * bt] = rounded[d];
          }
          ToHalf(v + row + g * hd, hd, half + v_at, avx512);
        } else {
          auto* full = reinterpret_cast<float*>(block);
          for (int d = 0; d < hd; ++d) full[k_at + int64_t{d} * bt] = k_row[d];
          std::memcpy(full + v_at, v + row + g * hd, sizeof(float) * hd);
        }
      }
    }
  }
}

int64_t AttentionScratchFloats(int threads, int max_positions) {
  return int64_t{threads} * kMaxHeadsPerPass * max_positions;
}

void PagedAttention(std::span<const AttentionChunk> chunks, const PagedKvLayout& layout,
                    int n_heads, const float* q, int q_stride, float* out, int out_stride,
                    float* scores, int max_positions, const AttentionScoring& scoring) {
  const int hd = layout.head_dim;
  const int group = n_heads / layout.n_kv_heads;
  const float scale = scoring.scale > 0 ? scoring.scale : 1.0f / std::sqrt(static_cast<float>(hd));
  const HeadsTable attend_heads = PickAttendHeads(hd, layout.block_tokens, layout.f16);
  int64_t rows = 0;
  int64_t work = 0;  // multiply-adds, to skip the thread team for tiny decode steps
  for (const AttentionChunk& c : chunks) {
    rows += c.n_tokens;
    work += static_cast<int64_t>(c.n_tokens) * (c.start_pos + c.n_tokens) * n_heads * hd;
  }
  // A group's heads go in passes of at most kMaxHeadsPerPass, as even as possible (7: 4 + 3);
  // with too few rows to give every thread several items (decode of a few sequences), a head
  // per pass. A head's operations are the same either way, so this choice changes no result.
  int passes_per_group = (group + kMaxHeadsPerPass - 1) / kMaxHeadsPerPass;
  if (rows * layout.n_kv_heads * passes_per_group < 4 * int64_t{omp_get_max_threads()}) {
    passes_per_group = group;
  }
  const int units = n_heads / group * passes_per_group;  // per row
  // Threads take about 4 heads at a time (fewer, larger grabs measured faster than single
  // heads: MHA at 16 sequences 0.85x the speed with one head per grab).
  const int grab = std::max(1, kMaxHeadsPerPass * passes_per_group / group);
  const int64_t items = rows * units;
  const int n_chunks = static_cast<int>(chunks.size());
  // Work items are (chunk, row, kv head, pass) flattened; dynamic scheduling balances long and
  // short rows. Which thread runs an item does not change its result.
#pragma omp parallel if (work >= (int64_t{1} << 17))
  {
    float* my_scores =
        scores + static_cast<int64_t>(omp_get_thread_num()) * kMaxHeadsPerPass * max_positions;
    int chunk_index = 0;
    int64_t chunk_begin = 0;  // first item of chunk_index
#pragma omp for schedule(dynamic, grab)
    for (int64_t item = 0; item < items; ++item) {
      // Items only move forward within a thread, so advance the chunk cursor lazily.
      if (item < chunk_begin) {
        chunk_index = 0;
        chunk_begin = 0;
      }
      while (chunk_index < n_chunks &&
             item >= chunk_begin + int64_t{chunks[chunk_index].n_tokens} * units) {
        chunk_begin += int64_t{chunks[chunk_index].n_tokens} * units;
        ++chunk_index;
      }
      const AttentionChunk& c = chunks[chunk_index];
      // Within a chunk, items go KV head by KV head and row by row within one: a thread's
      // consecutive items read the same head's K/V, which then stay in L2.
      const int local = static_cast<int>(item - chunk_begin);
      const int per_head = c.n_tokens * passes_per_group;
      const int g = local / per_head;
      const int t = local % per_head / passes_per_group;
      const int pass = local % passes_per_group;
      const int first_head = g * group + group * pass / passes_per_group;
      const int heads = g * group + group * (pass + 1) / passes_per_group - first_head;
      const int64_t row = c.first_row + t;
      const int n_pos = scoring.causal ? c.start_pos + t + 1 : c.start_pos + c.n_tokens;
      const RowSpan span{.first = scoring.window > 0 ? std::max(0, n_pos - scoring.window) : 0,
                         .n_pos = n_pos,
                         .scale = scale,
                         .softcap = scoring.softcap,
                         .sinks = scoring.sinks == nullptr ? nullptr : scoring.sinks + first_head};
      attend_heads[heads - 1](q + row * q_stride + first_head * hd, c.blocks, layout,
                              layout.k_offset + g * layout.head_stride,
                              layout.v_offset + g * layout.head_stride, span, my_scores,
                              max_positions, out + row * out_stride + first_head * hd);
    }
  }
}

}  // namespace textgen::model::ops
