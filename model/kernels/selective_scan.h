#pragma once

// The recurrent half of a Mamba2 layer (Nemotron-H, Granite 4.0-H), one sequence's chunk at a
// time: the selective scan (its convolution is causal_conv.h). Tokens are folded in one after
// another in position order, so a chunk's outputs are bitwise what feeding its tokens one at a
// time gives (chunk and batch invariance); callers split the work across threads by head, which
// never changes what one element computes.

namespace textgen::model::ops {

// One head of Mamba2's selective scan over `rows` tokens. Per token t, with the head's state S
// ([head_dim][state_dim], row i for input element i), its input x_t (head_dim floats), its
// group's B_t and C_t (state_dim floats), its step dt_t (already softplus'd), its decay
// a_t = exp(dt_t A) and the skip d:
//   S_i = a_t S_i + (x_ti dt_t) B_t;  y_ti = S_i . C_t + d x_ti
// x and out rows are `x_stride` / `out_stride` apart, B and C rows `bc_stride`, dt and decay
// `dt_stride`.
void SelectiveScanHead(const float* x, int x_stride, const float* b, const float* c, int bc_stride,
                       const float* dt, const float* decay, int dt_stride, float d, int rows,
                       int head_dim, int state_dim, float* state, float* out, int out_stride);

}  // namespace textgen::model::ops
