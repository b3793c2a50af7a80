#pragma once

// The depthwise causal convolution of the recurrent layers (Gated DeltaNet's over q|k|v, LFM2's
// short convolution over b * x), one sequence's chunk at a time. Tokens are taken in position
// order and each output is the same sum in the same order whatever the chunk, so a chunk's
// outputs are bitwise what feeding its tokens one at a time gives; callers split the work
// across threads by channel range, which never changes what one element computes.

namespace textgen::model::ops {

enum class ConvActivation { kNone, kSilu };

// For channels [begin, end) of `rows` consecutive tokens:
// out[t][c] = act(sum_j w[j][c] * x[t - kernel + 1 + j][c] + bias[c]) (j ascending; no bias
// when `bias` is null), where positions
// before the chunk come from `state` ([kernel - 1][channels], oldest first: the sequence's last
// inputs, zeros for a new one). Afterwards `state` holds the last kernel - 1 inputs. `weights`
// is [kernel][channels] (the GGUF tensor transposed: vectors run along the channels); kernel
// <= kMaxConvKernel (model_config.h). in/out rows are `in_stride` / `out_stride` apart.
void CausalConv(const float* in, int in_stride, int rows, const float* weights, const float* bias,
                int kernel, int channels, int begin, int end, ConvActivation act, float* state,
                float* out, int out_stride);

}  // namespace textgen::model::ops
