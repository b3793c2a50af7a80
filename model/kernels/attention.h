#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace textgen::model::ops {

// Where one layer's K/V live in a paged cache: block b of a sequence holds positions
// [b*block_tokens, (b+1)*block_tokens); inside a block, head g's keys start at element
// k_offset + g*head_stride and values at v_offset + g*head_stride. Values are token-major
// (one token every head_dim); keys are dimension-major (one dimension every block_tokens),
// so attention scores all keys of a block with plain vector FMAs.
struct PagedKvLayout {
  int block_tokens = 16;
  int n_kv_heads = 0;
  int head_dim = 0;
  int64_t k_offset = 0;     // elements from block start to (K, head 0, slot 0) of the layer
  int64_t v_offset = 0;     // elements from block start to (V, head 0, slot 0) of the layer
  int64_t head_stride = 0;  // elements between heads (block_tokens * head_dim)
  bool f16 = false;         // elements are IEEE half (uint16_t) instead of f32
};

// One sequence's chunk in the batch: rows [first_row, first_row + n_tokens) of the
// activations, at positions [start_pos, start_pos + n_tokens), with its block table.
struct AttentionChunk {
  std::byte* const* blocks = nullptr;
  int start_pos = 0;
  int n_tokens = 0;
  int first_row = 0;
};

// Writes each row's K and V (row r: kv_dim floats at k + r*stride and v + r*stride) into the
// chunk's cache slots at its positions (rounded to nearest-even half when layout.f16).
void StoreKv(std::span<const AttentionChunk> chunks, const PagedKvLayout& layout, const float* k,
             const float* v, int stride);

// How a layer turns q.k into scores: s = q.k * scale, then softcap * tanh(s / softcap) when
// softcap > 0 (Gemma 2); a row at position p sees positions (p - window, p] when window > 0
// (sliding-window layers), else [0, p]; without `causal` (encoders) it sees every position of
// its chunk's sequence up to the chunk's end.
struct AttentionScoring {
  float scale = 0.0f;  // 0: 1 / sqrt(head_dim)
  float softcap = 0.0f;
  int window = 0;
  bool causal = true;
  // [n_heads] or null: head h's sink logit s_h joins its softmax (unscaled) as one more score
  // with no value, so p_j = exp(s_j) / (exp(s_h) + sum_i exp(s_i)) (gpt-oss).
  const float* sinks = nullptr;
};

// Floats of scratch PagedAttention needs as `scores` for `threads` threads.
int64_t AttentionScratchFloats(int threads, int max_positions);

// Causal multi-head attention of every row over its own sequence's cached keys/values
// [0, position]: out[r, h*hd:(h+1)*hd] = softmax(q_h . K^T / sqrt(hd)) V for head h, with
// query head h reading kv head h / (n_heads / n_kv_heads) (GQA). q row r is at q + r*q_stride.
// `scores` is scratch of AttentionScratchFloats(max threads, max_positions) floats. The query
// heads of a KV head are scored and add their values together (each key or value load serves
// up to 4), each with the same operations in the same order as alone, by one thread: results
// do not depend on the rest of the batch.
void PagedAttention(std::span<const AttentionChunk> chunks, const PagedKvLayout& layout,
                    int n_heads, const float* q, int q_stride, float* out, int out_stride,
                    float* scores, int max_positions, const AttentionScoring& scoring = {});

}  // namespace textgen::model::ops
