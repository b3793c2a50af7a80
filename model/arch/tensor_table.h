#pragma once

// The tensors a GGUF file of each architecture holds: names, shapes, which are required, and
// which weight each one fills (a fused tensor fills several, split by rows). The loader reads
// a file by this table, the transformer checks the weights it is given against it, and the
// random-weights tool writes files from it: the names and shapes live here only.

#include <cstdint>
#include <string>
#include <vector>

#include "model/arch/architectures.h"
#include "model/arch/model_config.h"

namespace textgen::model {

// One logical weight of the model (model/format/weights.h holds a view per slot).
enum class WeightSlot : uint8_t {
  // Whole model.
  kTokenEmbedding,
  kPositionEmbedding,
  kOutputNorm,
  kOutputNormBias,
  kOutput,
  kRopeFreqs,
  kRopeFactorsLong,
  kRopeFactorsShort,
  kTokenTypes,
  kEmbeddingNorm,
  kEmbeddingNormBias,
  // Per layer.
  kAttnNorm,
  kAttnNormBias,
  kQ,
  kK,
  kV,
  kQBias,
  kKBias,
  kVBias,
  kQNorm,
  kKNorm,
  kAttnOutput,
  kAttnOutputBias,
  kFfnNorm,
  kFfnNormBias,
  kGate,
  kUp,
  kUpBias,
  kDown,
  kDownBias,
  kAttnPostNorm,
  kFfnPostNorm,
  // Per layer, mixture of experts: the router and the experts' matrices, one after another.
  kRouter,
  kGateExperts,
  kUpExperts,
  kDownExperts,
  // Per layer, gpt-oss: each head's attention sink; the router's and the experts' biases.
  kAttnSinks,
  kRouterBias,
  kGateExpertsBias,
  kUpExpertsBias,
  kDownExpertsBias,
  // Per layer, Gated DeltaNet (instead of the attention's): the q|k|v projection, z (the
  // output gate), the causal convolution, the decay's bias and scale, beta's and alpha's
  // projections, the output norm and projection.
  kSsmInput,
  kSsmGate,
  kSsmConv,
  kSsmDtBias,
  kSsmA,
  kSsmBeta,
  kSsmAlpha,
  kSsmNorm,
  kSsmOutput,
  // Qwen3-Next's fused forms (DeltaNetLayout::kQwen3Next): ssm_ba (beta | alpha), and the legacy
  // ssm_in (q, k, v, z per key head) of files converted before attn_qkv | attn_gate.
  kSsmBetaAlpha,
  kSsmQkvz,
  // Mamba2: the convolution's bias and the skip D (its other tensors fill the slots above).
  kSsmConvBias,
  kSsmD,
  // Per layer, a mixture's per-expert selection bias (exp_probs_b.bias).
  kExpertSelectionBias,
  // Per layer, a gated shared expert (qwen35moe): its gate logit's row and its SwiGLU.
  kSharedExpertGate,
  kSharedGate,
  kSharedUp,
  kSharedDown,
};

// What a random-weights model stores in a tensor: norm weights 1, norm biases 0, else noise.
// (kMinusOnes: a recurrent layer's decay scale, so random states decay instead of growing.)
enum class TensorInit : uint8_t { kRandom, kOnes, kZeros, kMinusOnes };

// A consecutive range of a fused tensor's rows (or a fused vector's elements).
struct TensorPart {
  WeightSlot slot;
  int64_t rows;  // elements for a vector
};

struct TensorEntry {
  std::string name;  // as in the file: "blk.3.attn_qkv.weight"
  int layer;         // -1 for a tensor of the whole model
  // Row-major [rows, cols] (GGUF lists [cols, rows]); a vector is rows 1, its elements cols.
  // Stacked experts' matrices: each expert's [rows, cols] (GGUF [cols, rows, experts]).
  int64_t rows;
  int64_t cols;
  bool required;  // optional tensors are shape-checked when present
  TensorInit init;
  // The weights it fills, in row order; one part covering everything when not fused.
  std::vector<TensorPart> parts;
  // A 3-D tensor of this many [rows, cols] matrices, one per expert (its view has
  // experts * rows rows); 1 for every other tensor.
  int64_t experts = 1;

  bool is_vector() const { return rows == 1; }
  int64_t total_rows() const { return experts * rows; }
};

// Which fusions a file uses. Files follow their architecture's (FileLayoutOf), though a llama
// file may carry attn_qkv too; the unfused layout is the logical one every weight check uses.
struct TensorLayout {
  bool fused_qkv = false;
  bool fused_gate_up = false;
  // Gated DeltaNet: ssm_ba instead of ssm_beta and ssm_alpha, ssm_in instead of
  // attn_qkv and attn_gate (Qwen3-Next files). Not row splits (the rows interleave per key
  // head), so the weights keep them whole and the checks follow what was loaded.
  bool fused_beta_alpha = false;
  bool fused_qkvz = false;
};
TensorLayout FileLayoutOf(const ArchitectureSpec& spec);

// The tensors of layer `layer`, in file order. Needs config's dims, head sizes and layer count.
std::vector<TensorEntry> LayerTensorTable(const ArchitectureSpec& spec, const ModelConfig& config,
                                          int layer, TensorLayout layout);

// The whole-model tensors (embeddings and their norm, final norm, output, RoPE factors), in
// file order: the
// first `LeadingTensorCount(spec)` come before the layers, the rest after them.
std::vector<TensorEntry> GlobalTensorTable(const ArchitectureSpec& spec, const ModelConfig& config);
int LeadingTensorCount(const ArchitectureSpec& spec);

}  // namespace textgen::model
