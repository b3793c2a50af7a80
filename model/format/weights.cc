#include "model/format/weights.h"

#include <cstdlib>
#include <utility>

#include "model/format/block_formats.h"

namespace textgen::model {

const char* DTypeName(DType dtype) { return FormatOf(dtype).name; }

void ToFloat(const TensorView& tensor, float* out) {
  DequantizeToFloat(tensor.dtype, static_cast<const uint8_t*>(tensor.data), tensor.elements(), out);
}

std::vector<float> ToFloatVector(const TensorView& tensor) {
  std::vector<float> v;
  if (tensor.empty()) return v;
  v.resize(tensor.elements());
  ToFloat(tensor, v.data());
  return v;
}

TensorView RowsOf(const TensorView& matrix, int64_t begin, int64_t count) {
  return TensorView{
      matrix.dtype, count, matrix.cols,
      static_cast<const uint8_t*>(matrix.data) + begin * BytesOf(matrix.dtype, matrix.cols)};
}

TensorView ExpertOf(const TensorView& stacked, int64_t experts, int64_t expert) {
  const int64_t rows = stacked.rows / experts;
  return RowsOf(stacked, expert * rows, rows);
}

size_t ByteSize(const TensorView& tensor) {
  return static_cast<size_t>(BytesOf(tensor.dtype, tensor.elements()));
}

void WeightStorage::DoneReading(const void* /*data*/, size_t /*bytes*/) const {}

const TensorView& WeightOf(const ModelWeights& w, int layer, WeightSlot slot) {
  using enum WeightSlot;
  const auto l = [&]() -> const LayerWeights& { return w.layers.at(static_cast<size_t>(layer)); };
  switch (slot) {
    case kTokenEmbedding:
      return w.token_embedding;
    case kPositionEmbedding:
      return w.position_embedding;
    case kOutputNorm:
      return w.output_norm;
    case kOutputNormBias:
      return w.output_norm_bias;
    case kOutput:
      return w.output;
    case kRopeFreqs:
      return w.rope_freqs;
    case kRopeFactorsLong:
      return w.rope_factors_long;
    case kRopeFactorsShort:
      return w.rope_factors_short;
    case kTokenTypes:
      return w.token_types;
    case kEmbeddingNorm:
      return w.embedding_norm;
    case kEmbeddingNormBias:
      return w.embedding_norm_bias;
    case kAttnNorm:
      return l().attn_norm;
    case kAttnNormBias:
      return l().attn_norm_bias;
    case kQ:
      return l().wq;
    case kK:
      return l().wk;
    case kV:
      return l().wv;
    case kQBias:
      return l().bq;
    case kKBias:
      return l().bk;
    case kVBias:
      return l().bv;
    case kQNorm:
      return l().q_norm;
    case kKNorm:
      return l().k_norm;
    case kAttnOutput:
      return l().wo;
    case kAttnOutputBias:
      return l().bo;
    case kFfnNorm:
      return l().ffn_norm;
    case kFfnNormBias:
      return l().ffn_norm_bias;
    case kGate:
      return l().w_gate;
    case kUp:
      return l().w_up;
    case kUpBias:
      return l().b_up;
    case kDown:
      return l().w_down;
    case kDownBias:
      return l().b_down;
    case kAttnPostNorm:
      return l().attn_post_norm;
    case kFfnPostNorm:
      return l().ffn_post_norm;
    case kRouter:
      return l().router;
    case kGateExperts:
      return l().gate_experts;
    case kUpExperts:
      return l().up_experts;
    case kDownExperts:
      return l().down_experts;
    case kAttnSinks:
      return l().attn_sinks;
    case kRouterBias:
      return l().router_bias;
    case kGateExpertsBias:
      return l().gate_experts_bias;
    case kUpExpertsBias:
      return l().up_experts_bias;
    case kDownExpertsBias:
      return l().down_experts_bias;
    case kSsmInput:
      return l().ssm_input;
    case kSsmGate:
      return l().ssm_gate;
    case kSsmConv:
      return l().ssm_conv;
    case kSsmDtBias:
      return l().ssm_dt_bias;
    case kSsmA:
      return l().ssm_a;
    case kSsmBeta:
      return l().ssm_beta;
    case kSsmAlpha:
      return l().ssm_alpha;
    case kSsmNorm:
      return l().ssm_norm;
    case kSsmOutput:
      return l().ssm_output;
    case kSsmBetaAlpha:
      return l().ssm_beta_alpha;
    case kSsmQkvz:
      return l().ssm_qkvz;
    case kSsmConvBias:
      return l().ssm_conv_bias;
    case kSsmD:
      return l().ssm_d;
    case kExpertSelectionBias:
      return l().expert_selection_bias;
    case kSharedExpertGate:
      return l().shared_expert_gate;
    case kSharedGate:
      return l().shared_gate;
    case kSharedUp:
      return l().shared_up;
    case kSharedDown:
      return l().shared_down;
  }
  std::abort();  // every slot is handled above
}

TensorView& WeightOf(ModelWeights& weights, int layer, WeightSlot slot) {
  return const_cast<TensorView&>(WeightOf(std::as_const(weights), layer, slot));
}

}  // namespace textgen::model
