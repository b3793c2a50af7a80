#pragma once

#include <cstdint>

namespace textgen::model::ops {

// Elementwise kernels over dense row-major buffers. Stateless; any thread.

// out[i] = bf16(x[i]) (round to nearest even; NaN stays NaN). Parallel over chunks.
void ConvertToBf16(const float* x, int64_t n, uint16_t* out);

// SwiGLU: out[r, i] = silu(gate_up[r, i]) * gate_up[r, hidden + i] for a [rows, 2*hidden]
// input holding the gate half then the up half of each row; out is [rows, hidden].
void SiluMul(const float* gate_up, int rows, int hidden, float* out);

// out[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), GPT-2's GELU (in place allowed).
void GeluTanh(const float* x, int64_t n, float* out);

// GeGLU (Gemma): out[r, i] = gelu_tanh(gate_up[r, i]) * gate_up[r, hidden + i], the layout
// of SiluMul.
void GeluTanhMul(const float* gate_up, int rows, int hidden, float* out);

// gpt-oss's clamped SwiGLU, the layout of SiluMul: with g = min(gate, 7) and u = clamp(up, -7, 7),
// out[r, i] = g * sigmoid(1.702 g) * (u + 1).
void SwiGluOaiMul(const float* gate_up, int rows, int hidden, float* out);

// x[i] *= sigmoid(gate[i]) (Qwen3.5's attention output gate).
void MulSigmoidInPlace(const float* gate, int64_t n, float* x);

// x[i] *= silu(gate[i]) (Gated DeltaNet's gated norm).
void MulSiluInPlace(const float* gate, int64_t n, float* x);

// x[i] = max(x[i], 0)^2 (Nemotron-H's squared-ReLU feed-forward).
void ReluSquaredInPlace(int64_t n, float* x);

// x[i] *= scale (Granite's residual and logit multipliers).
void ScaleInPlace(float scale, int64_t n, float* x);

// x[i] = cap * tanh(x[i] / cap) (Gemma's logit softcapping).
void SoftCap(float* x, int64_t n, float cap);

// y[i] += x[i] (residual connections).
void AddInPlace(const float* x, int64_t n, float* y);

}  // namespace textgen::model::ops
