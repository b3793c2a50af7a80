#include "model/ops/attention.h"

#include <omp.h>

#include <cmath>
#include <cstring>

#include "model/ops/fast_math.h"
#include "model/ops/simd.h"

namespace textgen::model::ops {
namespace {

// One query row and head over positions [0, n_pos). K/V are read straight from the blocks.
TEXTGEN_SIMD_CLONES void AttendRow(const float* q, std::byte* const* blocks,
                                   const PagedKvLayout& layout, int64_t k_base, int64_t v_base,
                                   int n_pos, float scale, float* scores, float* out) {
  const int hd = layout.head_dim;
  const int bt = layout.block_tokens;
  float max_score = -INFINITY;
  for (int j = 0; j < n_pos; ++j) {
    const float* k = reinterpret_cast<const float*>(blocks[j / bt]) + k_base + (j % bt) * hd;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int d = 0; d < hd; ++d) dot += q[d] * k[d];
    scores[j] = dot * scale;
    max_score = std::max(max_score, scores[j]);
  }
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < n_pos; ++j) {
    scores[j] = FastExp(scores[j] - max_score);
    sum += scores[j];
  }
  const float inv_sum = 1.0f / sum;
  for (int d = 0; d < hd; ++d) out[d] = 0.0f;
  for (int j = 0; j < n_pos; ++j) {
    const float* v = reinterpret_cast<const float*>(blocks[j / bt]) + v_base + (j % bt) * hd;
    const float p = scores[j] * inv_sum;
#pragma omp simd
    for (int d = 0; d < hd; ++d) out[d] += p * v[d];
  }
}

}  // namespace

void StoreKv(std::span<const AttentionChunk> chunks, const PagedKvLayout& layout, const float* k,
             const float* v, int stride) {
  const int hd = layout.head_dim;
  for (const AttentionChunk& chunk : chunks) {
    for (int t = 0; t < chunk.n_tokens; ++t) {
      const int pos = chunk.start_pos + t;
      float* block = reinterpret_cast<float*>(chunk.blocks[pos / layout.block_tokens]);
      const int64_t slot = static_cast<int64_t>(pos % layout.block_tokens) * hd;
      const int64_t row = static_cast<int64_t>(chunk.first_row + t) * stride;
      for (int g = 0; g < layout.n_kv_heads; ++g) {
        std::memcpy(block + layout.k_offset + g * layout.head_stride + slot, k + row + g * hd,
                    sizeof(float) * hd);
        std::memcpy(block + layout.v_offset + g * layout.head_stride + slot, v + row + g * hd,
                    sizeof(float) * hd);
      }
    }
  }
}

void PagedAttention(std::span<const AttentionChunk> chunks, const PagedKvLayout& layout,
                    int n_heads, const float* q, int q_stride, float* out, int out_stride,
                    float* scores, int max_positions) {
  const int hd = layout.head_dim;
  const int group = n_heads / layout.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int n_chunks = static_cast<int>(chunks.size());
  // Work items are (chunk, head, row) flattened; dynamic scheduling balances long and
  // short rows. Which thread runs an item does not change its result.
  int64_t items = 0;
  int64_t work = 0;  // multiply-adds, to skip the thread team for tiny decode steps
  for (const AttentionChunk& c : chunks) {
    items += static_cast<int64_t>(c.n_tokens) * n_heads;
    work += static_cast<int64_t>(c.n_tokens) * (c.start_pos + c.n_tokens) * n_heads * hd;
  }
#pragma omp parallel if (work >= (int64_t{1} << 17))
  {
    float* my_scores = scores + static_cast<int64_t>(omp_get_thread_num()) * max_positions;
    int chunk_index = 0;
    int64_t chunk_begin = 0;  // first item of chunk_index
#pragma omp for schedule(dynamic, 4)
    for (int64_t item = 0; item < items; ++item) {
      // Items only move forward within a thread, so advance the chunk cursor lazily.
      if (item < chunk_begin) {
        chunk_index = 0;
        chunk_begin = 0;
      }
      while (chunk_index < n_chunks &&
             item >= chunk_begin + int64_t{chunks[chunk_index].n_tokens} * n_heads) {
        chunk_begin += int64_t{chunks[chunk_index].n_tokens} * n_heads;
        ++chunk_index;
      }
      const AttentionChunk& c = chunks[chunk_index];
      const int local = static_cast<int>(item - chunk_begin);
      const int t = local / n_heads;
      const int h = local % n_heads;
      const int g = h / group;
      const int64_t row = c.first_row + t;
      AttendRow(q + row * q_stride + h * hd, c.blocks, layout,
                layout.k_offset + g * layout.head_stride, layout.v_offset + g * layout.head_stride,
                c.start_pos + t + 1, scale, my_scores, out + row * out_stride + h * hd);
    }
  }
}

}  // namespace textgen::model::ops
