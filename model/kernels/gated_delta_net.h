#pragma once

// The recurrent half of a Gated DeltaNet layer (Qwen3.5, Qwen3-Next), one sequence's chunk at a
// time: the gated delta rule (its convolution is causal_conv.h). Tokens are folded in one after
// another in position order, so a chunk's outputs are bitwise what feeding its tokens one at a
// time gives (chunk and batch invariance); callers split the work across threads by head, which
// never changes what one element computes.

namespace textgen::model::ops {

// One value head of the gated delta rule over `rows` tokens. Per token t, with the head's
// state S ([dv][dk], row j for value element j) and its L2-normed key k_t and query q_t
// (dk floats), value v_t (dv floats), log-decay g_t and beta_t:
//   S = exp(g_t) S;  d_j = beta_t (v_j - S_j . k_t);  S_j += d_j k_t;  o_j = scale S_j . q_t
// q/k rows are `qk_stride` apart, v and out rows `v_stride` / `out_stride`, g and beta
// `gb_stride` apart.
void GatedDeltaRuleHead(const float* q, const float* k, int qk_stride, const float* v, int v_stride,
                        const float* g, const float* beta, int gb_stride, int rows, int dk, int dv,
                        float scale, float* state, float* out, int out_stride);

// x / sqrt(sum(x^2) + eps) over `n` floats in place (the q and k heads' L2 norm, as llama.cpp
// computes it).
void L2NormInPlace(float* x, int n, float eps);

}  // namespace textgen::model::ops
