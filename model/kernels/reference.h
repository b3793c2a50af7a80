#pragma once

#include "model/arch/model_config.h"

namespace textgen::model::ops::reference {

// Naive, single-threaded twins of every optimized op, written run.c style: the test oracle
// and the documentation of what the fast kernels must compute. Dense row-major buffers.

// y[M, N] = x[M, K] W^T + b, W row-major [N, K], bias [N] or null; GELU(tanh) if `gelu`.
void Matmul(const float* x, const float* w, const float* bias, int m, int n, int k, bool gelu,
            float* y);

void RmsNorm(const float* x, int rows, int dim, const float* w, float eps, float* out);
void LayerNorm(const float* x, int rows, int dim, const float* w, const float* b, float eps,
               float* out);

// Rotates one row of n_heads heads at position `pos` in place.
void Rope(float* x, int n_heads, int head_dim, int rope_dim, float theta, RopeLayout layout,
          int pos);

// out[r, i] = silu(gate[r, i]) * up[r, i]
void SiluMul(const float* gate, const float* up, int n, float* out);
float GeluTanh(float x);

// Causal attention of T query rows (positions start_pos..start_pos+T-1) over contiguous
// K, V [start_pos + T, n_kv_heads * head_dim]; q and out are [T, n_heads * head_dim].
// Scores are q.k * scale (0: 1/sqrt(head_dim)), capped to softcap * tanh(s / softcap) when
// softcap > 0; with window > 0 a row at position p sees only positions > p - window; sinks
// ([n_heads] or null) add exp(sinks[h]) to head h's softmax denominator.
void Attention(const float* q, const float* k, const float* v, int t_rows, int start_pos,
               int n_heads, int n_kv_heads, int head_dim, float* out, float scale = 0,
               float softcap = 0, int window = 0, const float* sinks = nullptr);

}  // namespace textgen::model::ops::reference
