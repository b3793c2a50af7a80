#include "model/kernels/causal_conv.h"

#include <cstring>

#include "model/arch/model_config.h"
#include "model/kernels/fast_math.h"
#include "model/kernels/simd.h"

namespace textgen::model::ops {
namespace {

// One output row: the window's rows (oldest first) weighed tap by tap, the bias (Mamba2's), then
// the activation.
template <ConvActivation kAct, bool kBias>
TEXTGEN_SIMD_CLONES void ConvRow(const float* const* window, const float* weights,
                                 const float* bias, int kernel, int channels, int begin, int end,
                                 float* out) {
#pragma omp simd
  for (int c = begin; c < end; ++c) {
    float sum = 0.0f;
    for (int j = 0; j < kernel; ++j)
      sum += weights[static_cast<size_t>(j) * channels + c] * window[j][c];
    if constexpr (kBias) sum += bias[c];
    if constexpr (kAct == ConvActivation::kSilu) {
      out[c] = sum / (1.0f + FastExp(-sum));
    } else {
      out[c] = sum;
    }
  }
}

}  // namespace

void CausalConv(const float* in, int in_stride, int rows, const float* weights, const float* bias,
                int kernel, int channels, int begin, int end, ConvActivation act, float* state,
                float* out, int out_stride) {
  const int history = kernel - 1;
  // Row r of the sequence's inputs from the chunk's start - history: the state's, then the
  // chunk's.
  const auto input = [&](int r) -> const float* {
    return r < history ? state + static_cast<size_t>(r) * channels
                       : in + static_cast<size_t>(r - history) * in_stride;
  };
  const float* window[kMaxConvKernel];
  for (int t = 0; t < rows; ++t) {
    for (int j = 0; j < kernel; ++j) window[j] = input(t + j);
    float* row = out + static_cast<size_t>(t) * out_stride;
    if (act == ConvActivation::kSilu && bias != nullptr) {
      ConvRow<ConvActivation::kSilu, true>(window, weights, bias, kernel, channels, begin, end,
                                           row);
    } else if (act == ConvActivation::kSilu) {
      ConvRow<ConvActivation::kSilu, false>(window, weights, bias, kernel, channels, begin, end,
                                            row);
    } else if (bias != nullptr) {
      ConvRow<ConvActivation::kNone, true>(window, weights, bias, kernel, channels, begin, end,
                                           row);
    } else {
      ConvRow<ConvActivation::kNone, false>(window, weights, bias, kernel, channels, begin, end,
                                            row);
    }
  }
  // The last `history` inputs become the state (a short chunk keeps some of the old ones:
  // copied oldest first, so a row is read before it is overwritten).
  for (int j = 0; j < history; ++j) {
    const float* from = input(rows + j);
    float* to = state + static_cast<size_t>(j) * channels;
    if (from != to) std::memcpy(to + begin, from + begin, sizeof(float) * (end - begin));
  }
}

}  // namespace textgen::model::ops
