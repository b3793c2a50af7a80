#include "model/format/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/arch/architectures.h"
#include "model/arch/tensor_table.h"
#include "model/base/status_macros.h"
#include "model/format/block_formats.h"
#include "model/format/gguf_tokenizer.h"

namespace textgen::model {
namespace {

constexpr int64_t kMaxDim = 1 << 20;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxContext = 1 << 24;
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxExperts = 1024;  // llama.cpp's LLAMA_MAX_EXPERTS

std::string DimsString(const GgufTensorInfo& t) {
  return absl::StrCat("[", absl::StrJoin(t.dims.begin(), t.dims.begin() + t.n_dims, ", "), "]");
}

// Looks tensors up by name and checks their shapes. Shapes are given as (rows, cols) of the
// row-major matrix, times `experts` for a stack of experts' matrices; GGUF stores them
// innermost-first, so the file says [cols, rows] (or [cols, rows, experts]).
class TensorFetcher {
 public:
  explicit TensorFetcher(const GgufFile& file) : file_(file) {}

  absl::StatusOr<TensorView> Required(const std::string& name, int64_t rows, int64_t cols,
                                      int64_t experts = 1) const {
    const GgufTensorInfo* t = file_.FindTensor(name);
    if (t == nullptr) {
      return absl::NotFoundError(absl::StrCat("missing tensor ", name, " (expected shape ",
                                              Expected(rows, cols, experts), ")"));
    }
    return Check(*t, rows, cols, experts);
  }

  bool Has(const std::string& name) const { return file_.FindTensor(name) != nullptr; }

  // Empty view when absent; shape-checked when present.
  absl::StatusOr<TensorView> Optional(const std::string& name, int64_t rows, int64_t cols) const {
    const GgufTensorInfo* t = file_.FindTensor(name);
    if (t == nullptr) return TensorView{};
    return Check(*t, rows, cols, 1);
  }

 private:
  static std::string Expected(int64_t rows, int64_t cols, int64_t experts) {
    if (experts > 1) return absl::StrCat("[", cols, ", ", rows, ", ", experts, "]");
    return rows == 1 ? absl::StrCat("[", cols, "]") : absl::StrCat("[", cols, ", ", rows, "]");
  }

  absl::StatusOr<TensorView> Check(const GgufTensorInfo& t, int64_t rows, int64_t cols,
                                   int64_t experts) const {
    // Trailing dims of 1 are accepted ([64, 1] for a vector).
    const bool ok =
        t.dims[0] == cols && t.dims[1] == rows && t.dims[2] == experts && t.dims[3] == 1;
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", t.name, ": expected shape ", Expected(rows, cols, experts),
                       ", got ", DimsString(t), " (GGUF order, innermost first)"));
    }
    return TensorView{t.dtype, experts * rows, cols, file_.TensorData(t)};
  }

  const GgufFile& file_;
};

// Elements [begin, begin + count) of a vector [1, n] as a [1, count] view.
absl::StatusOr<TensorView> VectorSlice(const TensorView& v, const std::string& name, int64_t begin,
                                       int64_t count) {
  const int block = FormatOf(v.dtype).block_elements;
  if (begin % block != 0 || count % block != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor ", name, ": cannot split a ", DTypeName(v.dtype), " vector at ", begin,
                     " (not a multiple of its ", block, "-element block)"));
  }
  return TensorView{v.dtype, 1, count,
                    static_cast<const uint8_t*>(v.data) + BytesOf(v.dtype, begin)};
}

// Which layers slide: attention.sliding_window_pattern as a period n (every n-th layer, the
// last of each period, is global) or as one bool per layer; else the architecture's period.
absl::StatusOr<std::vector<bool>> ReadSlidingLayers(const GgufFile& file, const std::string& p,
                                                    const SlidingWindowTraits& traits,
                                                    int n_layers) {
  const std::string key = p + "attention.sliding_window_pattern";
  std::vector<bool> sliding(static_cast<size_t>(n_layers));
  const GgufKv* kv = file.FindKey(key);
  if (kv != nullptr && kv->value.type == GgufType::kArray) {
    TEXTGEN_ASSIGN_OR_RETURN(const std::vector<GgufValue>* flags,
                             file.GetArray(key, GgufType::kBool));
    if (static_cast<int>(flags->size()) != n_layers) {
      return absl::InvalidArgumentError(absl::StrCat(
          key, " has ", flags->size(), " entries, expected one per layer (", n_layers, ")"));
    }
    for (int l = 0; l < n_layers; ++l) sliding[l] = std::get<bool>((*flags)[l].data);
    return sliding;
  }
  int64_t period = traits.pattern;
  if (kv != nullptr) {
    TEXTGEN_ASSIGN_OR_RETURN(period, file.GetInt(key, 0, kMaxLayers));
  }
  // As llama.cpp: period 0 makes every layer slide; otherwise layer l slides unless it ends
  // its period.
  for (int l = 0; l < n_layers; ++l) sliding[l] = period == 0 || l % period < period - 1;
  return sliding;
}

// A positive float key, or `fallback` when absent.
absl::StatusOr<float> PositiveFloatOr(const GgufFile& file, const std::string& key,
                                      float fallback) {
  if (file.FindKey(key) == nullptr) return fallback;
  TEXTGEN_ASSIGN_OR_RETURN(const double value, file.GetFloat(key));
  if (!(value > 0 && value < 1e9)) {
    return absl::InvalidArgumentError(absl::StrCat(key, " ", value, " is not positive"));
  }
  return static_cast<float>(value);
}

// Gemma's embedding scale, attention scale and softcaps, with llama.cpp's
// defaults (the architecture's traits) for keys the file leaves out.
absl::Status ReadGemmaConfig(const GgufFile& file, const ArchitectureSpec& spec, ModelConfig& c) {
  const GemmaTraits& gemma = spec.gemma;
  const std::string p = std::string(spec.name) + ".";
  c.embedding_scale = std::sqrt(static_cast<float>(c.dim));
  if (c.n_layers == gemma.layers_of_27b) {
    c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.dim / c.n_heads));
  }
  if (gemma.default_attention_softcap > 0) {
    TEXTGEN_ASSIGN_OR_RETURN(
        c.attention_softcap,
        PositiveFloatOr(file, p + "attn_logit_softcapping", gemma.default_attention_softcap));
  }
  if (gemma.default_final_logit_softcap > 0 || file.FindKey(p + "final_logit_softcapping")) {
    TEXTGEN_ASSIGN_OR_RETURN(
        c.final_logit_softcap,
        PositiveFloatOr(file, p + "final_logit_softcapping", gemma.default_final_logit_softcap));
  }
  return absl::OkStatus();
}

// Which layers slide and over how many positions, and their RoPE, with llama.cpp's defaults (the
// architecture's traits) for keys the file leaves out.
absl::Status ReadSlidingWindowConfig(const GgufFile& file, const ArchitectureSpec& spec,
                                     ModelConfig& c) {
  const SlidingWindowTraits& traits = spec.sliding;
  const std::string p = std::string(spec.name) + ".";
  int64_t window = traits.default_window;
  if (file.FindKey(p + "attention.sliding_window")) {
    TEXTGEN_ASSIGN_OR_RETURN(window, file.GetInt(p + "attention.sliding_window", 0, kMaxContext));
  }
  if (window == 0) return absl::OkStatus();  // every layer global
  c.sliding_window = static_cast<int>(window);
  TEXTGEN_ASSIGN_OR_RETURN(c.sliding_window_layers, ReadSlidingLayers(file, p, traits, c.n_layers));
  c.rope_theta_local = traits.local_rope_inherits_global ? c.rope_theta : 10000.0f;
  c.rope_freq_scale_local = traits.local_rope_inherits_global ? c.rope_freq_scale : 1.0f;
  TEXTGEN_ASSIGN_OR_RETURN(c.rope_theta_local,
                           PositiveFloatOr(file, p + "rope.freq_base_swa", c.rope_theta_local));
  return absl::OkStatus();
}

// YaRN's original context (default: the model's), as llama.cpp reads it. Its beta_fast and
// beta_slow keys are read by llama.cpp for other architectures only (grok, mistral3), so the
// defaults 32 and 1 hold here; DeepSeek's log multiplier is not supported.
absl::Status ReadYarnConfig(const GgufFile& file, const std::string& p, ModelConfig& c) {
  c.rope_yarn_original_context = c.context_length;
  const std::string key = p + "rope.scaling.original_context_length";
  if (file.FindKey(key)) {
    TEXTGEN_ASSIGN_OR_RETURN(c.rope_yarn_original_context, file.GetInt(key, 1, kMaxContext));
  }
  if (file.FindKey(p + "rope.scaling.yarn_log_multiplier")) {
    TEXTGEN_ASSIGN_OR_RETURN(const double multiplier,
                             file.GetFloat(p + "rope.scaling.yarn_log_multiplier"));
    if (multiplier != 0) {
      return absl::UnimplementedError(
          absl::StrCat(p, "rope.scaling.yarn_log_multiplier ", multiplier,
                       ": YaRN with a log multiplier (DeepSeek's) is not supported"));
    }
  }
  return absl::OkStatus();
}

// How the router weighs the chosen experts, and which layers keep a dense feed-forward, as the
// architecture and llama.cpp read them.
absl::Status ReadRoutingConfig(const GgufFile& file, const ArchitectureSpec& spec, ModelConfig& c) {
  const std::string p = std::string(spec.name) + ".";
  const ExpertTraits& traits = spec.experts;
  c.expert_gating = traits.gating;
  if (traits.gating_from_key && file.FindKey(p + "expert_gating_func")) {
    TEXTGEN_ASSIGN_OR_RETURN(const int64_t gating, file.GetInt(p + "expert_gating_func", 1, 3));
    constexpr ExpertGating kByNumber[] = {ExpertGating::kSoftmax, ExpertGating::kSigmoid,
                                          ExpertGating::kSoftmaxOfChosen};
    c.expert_gating = kByNumber[gating - 1];
  }
  if (traits.weights_keys) {
    c.expert_weights_norm = false;  // llama.cpp's default
    if (file.FindKey(p + "expert_weights_norm")) {
      TEXTGEN_ASSIGN_OR_RETURN(c.expert_weights_norm, file.GetBool(p + "expert_weights_norm"));
    }
    if (file.FindKey(p + "expert_weights_scale")) {
      TEXTGEN_ASSIGN_OR_RETURN(const double scale, file.GetFloat(p + "expert_weights_scale"));
      if (!(scale >= 0 && scale < 1e6)) {
        return absl::InvalidArgumentError(
            absl::StrCat(p, "expert_weights_scale ", scale, " is not in [0, 1e6)"));
      }
      if (scale != 0) c.expert_weights_scale = static_cast<float>(scale);  // 0: none
    }
  }
  if (file.FindKey(p + "expert_group_count")) {
    TEXTGEN_ASSIGN_OR_RETURN(const int64_t groups,
                             file.GetInt(p + "expert_group_count", 0, c.experts));
    if (groups > 1) {
      return absl::UnimplementedError(absl::StrCat(
          p, "expert_group_count is ", groups,
          ": choosing experts within the best groups (DeepSeek-V3's) is not supported"));
    }
  }
  if (traits.leading_dense_key && file.FindKey(p + "leading_dense_block_count")) {
    TEXTGEN_ASSIGN_OR_RETURN(c.leading_dense_layers,
                             file.GetInt(p + "leading_dense_block_count", 0, c.n_layers));
  }
  return absl::OkStatus();
}

// The mixture of experts: how many, how many per token, how wide ({arch}.expert_*), as llama.cpp
// reads them.
absl::Status ReadExpertConfig(const GgufFile& file, const ArchitectureSpec& spec, ModelConfig& c) {
  const std::string p = std::string(spec.name) + ".";
  if (file.FindKey(p + "expert_count")) {
    TEXTGEN_ASSIGN_OR_RETURN(c.experts, file.GetInt(p + "expert_count", 0, kMaxExperts));
  }
  if (c.experts == 0) {
    if (spec.experts.required) {
      return absl::InvalidArgumentError(
          absl::StrCat("a ", spec.name, " model needs ", p, "expert_count > 0"));
    }
    return absl::OkStatus();
  }
  if (!spec.experts.allowed) {
    return absl::UnimplementedError(absl::StrCat(
        p, "expert_count is ", c.experts, ": a mixture of experts is not supported in ", spec.name,
        " models (it is in ", MixtureArchitectureNames(), ")"));
  }
  const GgufKv* used = file.FindKey(p + "expert_used_count");
  if (used != nullptr && used->value.type == GgufType::kArray) {
    return absl::UnimplementedError(absl::StrCat(
        p,
        "expert_used_count is an array: a different number of experts per layer is not "
        "supported"));
  }
  if (used == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("a mixture-of-experts model needs ", p,
                                                   "expert_used_count (experts per token)"));
  }
  TEXTGEN_ASSIGN_OR_RETURN(c.experts_used, file.GetInt(p + "expert_used_count", 1, c.experts));
  if (file.FindKey(p + "expert_feed_forward_length")) {
    TEXTGEN_ASSIGN_OR_RETURN(c.expert_hidden_dim,
                             file.GetInt(p + "expert_feed_forward_length", 1, kMaxDim));
  } else {
    c.expert_hidden_dim =
        spec.experts.width_divides_by_used ? c.hidden_dim / c.experts_used : c.hidden_dim;
    if (c.expert_hidden_dim <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("no ", p, "expert_feed_forward_length, and ", p, "feed_forward_length ",
                       c.hidden_dim, " / ", c.experts_used, " experts per token leaves no width"));
    }
  }
  const std::string shared_key = p + "expert_shared_feed_forward_length";
  const SharedExpert shared = spec.experts.shared_expert;
  if (shared == SharedExpert::kWhenSized && file.FindKey(shared_key)) {
    TEXTGEN_ASSIGN_OR_RETURN(c.shared_expert_hidden_dim, file.GetInt(shared_key, 0, kMaxDim));
  } else if (shared != SharedExpert::kNone && shared != SharedExpert::kWhenSized) {
    c.shared_expert_hidden_dim = c.hidden_dim;  // llama.cpp's default
    if (file.FindKey(shared_key)) {
      TEXTGEN_ASSIGN_OR_RETURN(c.shared_expert_hidden_dim, file.GetInt(shared_key, 1, kMaxDim));
    }
  }
  return ReadRoutingConfig(file, spec, c);
}

// Heads, KV heads and the head size.
absl::Status ReadAttentionShape(const GgufFile& file, const std::string& p, ModelConfig& c) {
  c.n_kv_heads = c.n_heads;
  const std::string kv_key = p + "attention.head_count_kv";
  const GgufKv* kv = file.FindKey(kv_key);
  if (kv != nullptr && kv->value.type == GgufType::kArray) {
    // One entry per layer (LFM2): 0 for the layers that do not attend (ReadRecurrentConfig),
    // the same count for every one that does.
    TEXTGEN_ASSIGN_OR_RETURN(const std::vector<int64_t> per_layer,
                             file.GetIntArray(kv_key, 0, c.n_heads));
    if (static_cast<int>(per_layer.size()) != c.n_layers) {
      return absl::InvalidArgumentError(absl::StrCat(kv_key, " has ", per_layer.size(),
                                                     " entries, expected one per block (",
                                                     c.n_layers, ")"));
    }
    int64_t heads = 0;
    for (const int64_t n : per_layer) {
      if (n == 0) continue;
      if (heads != 0 && n != heads) {
        return absl::UnimplementedError(
            absl::StrCat(kv_key, " differs between attention layers (", heads, " and ", n,
                         "): a different number of KV heads per layer is not supported"));
      }
      heads = n;
    }
    if (heads > 0) c.n_kv_heads = static_cast<int>(heads);
  } else if (kv != nullptr) {
    TEXTGEN_ASSIGN_OR_RETURN(c.n_kv_heads, file.GetInt(kv_key, 1, c.n_heads));
  }
  if (kv != nullptr) {
    if (c.n_heads % c.n_kv_heads != 0) {
      return absl::InvalidArgumentError(absl::StrCat(p, "attention.head_count ", c.n_heads,
                                                     " is not a multiple of ", p,
                                                     "attention.head_count_kv ", c.n_kv_heads));
    }
  }
  // The head size: key_length when given (Qwen 3, Gemma: not dim / heads), else dim / heads.
  if (file.FindKey(p + "attention.key_length")) {
    TEXTGEN_ASSIGN_OR_RETURN(c.head_dim, file.GetInt(p + "attention.key_length", 1, kMaxDim));
  } else if (c.dim % c.n_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        p, "embedding_length ", c.dim, " is not a multiple of ", p, "attention.head_count ",
        c.n_heads, " and there is no ", p, "attention.key_length"));
  } else {
    c.head_dim = c.dim / c.n_heads;
  }
  if (file.FindKey(p + "attention.value_length")) {
    TEXTGEN_ASSIGN_OR_RETURN(const int64_t value_length,
                             file.GetInt(p + "attention.value_length", 1, kMaxDim));
    if (value_length != c.head_dim) {
      return absl::UnimplementedError(absl::StrCat(
          p, "attention.value_length ", value_length, " differs from the key length ", c.head_dim,
          ": attention with different key and value sizes is not supported"));
    }
  }
  return absl::OkStatus();
}

// The rotary embedding: its dimensions, base and scaling (none for learned positions).
absl::Status ReadRopeConfig(const GgufFile& file, const ArchitectureSpec& spec,
                            const std::string& p, ModelConfig& c) {
  if (spec.rope_use == RopeUse::kNever) {
    c.rope = false;
  } else if (spec.rope_use == RopeUse::kFinetunedKey &&
             file.FindKey(p + "rope.scaling.finetuned")) {
    TEXTGEN_ASSIGN_OR_RETURN(c.rope, file.GetBool(p + "rope.scaling.finetuned"));
  }
  if (spec.learned_positions || !c.rope) {
    c.rope_dim = 0;
  } else {
    c.rope_dim = c.head_dim;
    if (file.FindKey(p + "rope.dimension_count")) {
      TEXTGEN_ASSIGN_OR_RETURN(c.rope_dim, file.GetInt(p + "rope.dimension_count", 2, c.head_dim));
      if (c.rope_dim % 2 != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(p, "rope.dimension_count ", c.rope_dim, " is odd"));
      }
    }
    if (file.FindKey(p + "rope.freq_base")) {
      TEXTGEN_ASSIGN_OR_RETURN(const double theta, file.GetFloat(p + "rope.freq_base"));
      if (!(theta > 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat(p, "rope.freq_base ", theta, " is not positive"));
      }
      c.rope_theta = static_cast<float>(theta);
    }
    // Scaling that changes the rotation angles must not be ignored silently.
    if (file.FindKey(p + "rope.scaling.type")) {
      TEXTGEN_ASSIGN_OR_RETURN(const std::string type, file.GetString(p + "rope.scaling.type"));
      if (type == "linear" || type == "yarn") {
        TEXTGEN_ASSIGN_OR_RETURN(const double factor, file.GetFloat(p + "rope.scaling.factor"));
        if (!(factor >= 1 && factor <= 1024)) {
          return absl::InvalidArgumentError(
              absl::StrCat(p, "rope.scaling.factor ", factor, " is not in [1, 1024]"));
        }
        c.rope_freq_scale = static_cast<float>(1 / factor);
      } else if (type != "none") {
        return absl::UnimplementedError(
            absl::StrCat(p, "rope.scaling.type \"", type,
                         "\" is not supported (supported: none, linear, yarn)"));
      }
      if (type == "yarn") TEXTGEN_RETURN_IF_ERROR(ReadYarnConfig(file, p, c));
    }
    if (file.FindKey(p + "rope.scaling.attn_factor")) {
      TEXTGEN_ASSIGN_OR_RETURN(const double factor, file.GetFloat(p + "rope.scaling.attn_factor"));
      if (!(factor > 0 && factor <= 16)) {
        return absl::InvalidArgumentError(
            absl::StrCat(p, "rope.scaling.attn_factor ", factor, " is not in (0, 16]"));
      }
      c.rope_attn_factor = static_cast<float>(factor);
    }
  }
  return absl::OkStatus();
}

// The norms' epsilon (required for LayerNorm, optional for RMSNorm).
absl::Status ReadNormEpsilon(const GgufFile& file, const ArchitectureSpec& spec,
                             const std::string& p, ModelConfig& c) {
  std::string eps_key = spec.norm == NormKind::kRms ? p + "attention.layer_norm_rms_epsilon"
                                                    : p + "attention.layer_norm_epsilon";
  if (spec.rms_eps_falls_back && !file.FindKey(eps_key)) {
    eps_key = p + "attention.layer_norm_epsilon";
    if (!file.FindKey(eps_key)) return absl::OkStatus();
  }
  if (spec.norm == NormKind::kLayer || file.FindKey(eps_key)) {
    TEXTGEN_ASSIGN_OR_RETURN(const double eps, file.GetFloat(eps_key));
    if (!(eps > 0 && eps < 1)) {
      return absl::InvalidArgumentError(absl::StrCat(eps_key, " ", eps, " is not in (0, 1)"));
    }
    c.norm_eps = static_cast<float>(eps);
  }
  return absl::OkStatus();
}

// Causal or bidirectional attention, token types and pooling (encoders and embedders).
absl::Status ReadEmbeddingConfig(const GgufFile& file, const ArchitectureSpec& spec,
                                 const std::string& p, ModelConfig& c) {
  c.causal = !spec.encoder;
  if (file.FindKey(p + "attention.causal")) {
    TEXTGEN_ASSIGN_OR_RETURN(c.causal, file.GetBool(p + "attention.causal"));
    if (!c.causal && !spec.encoder) {
      return absl::UnimplementedError(absl::StrCat(
          p,
          "attention.causal is false: bidirectional attention is supported in encoders "
          "(bert, nomic-bert), not in a generative ",
          spec.name, " model"));
    }
  }
  if (spec.encoder) {
    // As llama.cpp: an encoder's file says how many token types it embeds.
    if (!file.FindKey("tokenizer.ggml.token_type_count")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a ", spec.name, " model needs the metadata key tokenizer.ggml.token_type_count"));
    }
    TEXTGEN_ASSIGN_OR_RETURN(c.token_type_count,
                             file.GetInt("tokenizer.ggml.token_type_count", 1, 1 << 16));
  }
  if (file.FindKey(p + "pooling_type")) {
    TEXTGEN_ASSIGN_OR_RETURN(const int64_t pooling, file.GetInt(p + "pooling_type", 0, 4));
    if (pooling == 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          p, "pooling_type 4 (rank: a reranker's classification head) is not supported"));
    }
    c.pooling = static_cast<Pooling>(pooling);
  }
  return absl::OkStatus();
}

// Nemotron-H's per-layer feed_forward_length: a block with a width is a feed-forward, the others
// mixers (ReadRecurrentConfig); every feed-forward block has the same width.
absl::Status ReadFeedForwardLayers(const GgufFile& file, const std::string& p, ModelConfig& c) {
  const std::string key = p + "feed_forward_length";
  const GgufKv* kv = file.FindKey(key);
  if (kv == nullptr || kv->value.type != GgufType::kArray) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", p.substr(0, p.size() - 1), " model needs ", key,
                     " as one entry per block (0 for the mixer blocks)"));
  }
  TEXTGEN_ASSIGN_OR_RETURN(const std::vector<int64_t> widths, file.GetIntArray(key, 0, kMaxDim));
  if (static_cast<int>(widths.size()) != c.n_layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        key, " has ", widths.size(), " entries, expected one per block (", c.n_layers, ")"));
  }
  c.feed_forward_layers.assign(static_cast<size_t>(c.n_layers), false);
  for (int l = 0; l < c.n_layers; ++l) {
    if (widths[l] == 0) continue;
    if (c.hidden_dim != 0 && widths[l] != c.hidden_dim) {
      return absl::UnimplementedError(
          absl::StrCat(key, " differs between feed-forward blocks (", c.hidden_dim, " and ",
                       widths[l], "): a different width per block is not supported"));
    }
    c.hidden_dim = static_cast<int>(widths[l]);
    c.feed_forward_layers[l] = true;
  }
  if (c.hidden_dim == 0) {
    return absl::InvalidArgumentError(absl::StrCat(key, " has no feed-forward block (all 0)"));
  }
  return absl::OkStatus();
}

// Granite's multipliers (each optional): embedding_scale, residual_scale, logit_scale,
// attention.scale.
absl::Status ReadGraniteScales(const GgufFile& file, const std::string& p, ModelConfig& c) {
  TEXTGEN_ASSIGN_OR_RETURN(c.embedding_scale,
                           PositiveFloatOr(file, p + "embedding_scale", c.embedding_scale));
  TEXTGEN_ASSIGN_OR_RETURN(c.residual_scale,
                           PositiveFloatOr(file, p + "residual_scale", c.residual_scale));
  TEXTGEN_ASSIGN_OR_RETURN(c.logit_scale, PositiveFloatOr(file, p + "logit_scale", c.logit_scale));
  TEXTGEN_ASSIGN_OR_RETURN(c.attention_scale,
                           PositiveFloatOr(file, p + "attention.scale", c.attention_scale));
  return absl::OkStatus();
}

// Mamba2's shape (ssm.*), checked to split into heads and groups.
absl::Status ReadMamba2Config(const GgufFile& file, const std::string& p, ModelConfig& c) {
  Mamba2Shape& m = c.mamba2;
  const auto read = [&](const char* key, int& out) -> absl::Status {
    TEXTGEN_ASSIGN_OR_RETURN(const int64_t v, file.GetInt(p + key, 1, kMaxDim));
    out = static_cast<int>(v);
    return absl::OkStatus();
  };
  TEXTGEN_RETURN_IF_ERROR(read("ssm.conv_kernel", m.conv_kernel));
  TEXTGEN_RETURN_IF_ERROR(read("ssm.inner_size", m.inner));
  TEXTGEN_RETURN_IF_ERROR(read("ssm.state_size", m.state));
  TEXTGEN_RETURN_IF_ERROR(read("ssm.time_step_rank", m.heads));
  TEXTGEN_RETURN_IF_ERROR(read("ssm.group_count", m.groups));
  if (m.conv_kernel > kMaxConvKernel) {
    return absl::InvalidArgumentError(absl::StrCat(p, "ssm.conv_kernel ", m.conv_kernel,
                                                   " is past the supported ", kMaxConvKernel));
  }
  if (m.inner % m.heads != 0 || m.heads % m.groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        p, "ssm.time_step_rank (heads) ", m.heads, " must divide ", p, "ssm.inner_size ", m.inner,
        " and be a multiple of ", p, "ssm.group_count ", m.groups));
  }
  return absl::OkStatus();
}

// LFM2's short convolution: its taps (shortconv.l_cache). Sliding-window attention (only
// LFM2.5-Audio's tokenizer has it) is refused rather than ignored.
absl::Status ReadShortConvConfig(const GgufFile& file, const std::string& p, ModelConfig& c) {
  TEXTGEN_ASSIGN_OR_RETURN(const int64_t taps,
                           file.GetInt(p + "shortconv.l_cache", 2, kMaxConvKernel));
  c.short_conv_kernel = static_cast<int>(taps);
  if (file.FindKey(p + "attention.sliding_window")) {
    TEXTGEN_ASSIGN_OR_RETURN(const int64_t window,
                             file.GetInt(p + "attention.sliding_window", 0, kMaxContext));
    if (window > 0) {
      return absl::UnimplementedError(
          absl::StrCat(p, "attention.sliding_window is ", window,
                       ": LFM2 with sliding-window attention is not supported"));
    }
  }
  return absl::OkStatus();
}

// The layer list and shape of a hybrid's recurrent layers. Which layers attend: for LFM2
// (default_attention_interval 0) those with attention.head_count_kv entries > 0; else
// attention.recurrent_layers (one bool per block) when present, else every
// full_attention_interval-th (default 4, as llama.cpp). Multi-token-prediction blocks
// (nextn_predict_layers, at the end) are not part of the trunk: they are left out.
absl::Status ReadRecurrentConfig(const GgufFile& file, const ArchitectureSpec& spec,
                                 const std::string& p, ModelConfig& c) {
  int64_t nextn = 0;
  if (file.FindKey(p + "nextn_predict_layers")) {
    TEXTGEN_ASSIGN_OR_RETURN(nextn, file.GetInt(p + "nextn_predict_layers", 0, c.n_layers - 1));
  }
  const int all_layers = c.n_layers;
  c.n_layers -= static_cast<int>(nextn);
  std::vector<bool> recurrent(static_cast<size_t>(c.n_layers));
  const std::string list_key = p + "attention.recurrent_layers";
  const std::string kv_key = p + "attention.head_count_kv";
  const GgufKv* kv = file.FindKey(kv_key);
  if (spec.default_attention_interval == 0) {
    // The layers without KV heads are recurrent (a scalar count: every layer attends), but for
    // Nemotron-H's feed-forward blocks (which have none either).
    if (kv != nullptr && kv->value.type == GgufType::kArray) {
      TEXTGEN_ASSIGN_OR_RETURN(const std::vector<int64_t> per_layer,
                               file.GetIntArray(kv_key, 0, c.n_heads));
      for (int l = 0; l < c.n_layers; ++l) recurrent[l] = per_layer[l] == 0;
    }
  } else if (file.FindKey(list_key)) {
    TEXTGEN_ASSIGN_OR_RETURN(const std::vector<GgufValue>* flags,
                             file.GetArray(list_key, GgufType::kBool));
    if (static_cast<int>(flags->size()) != all_layers) {
      return absl::InvalidArgumentError(absl::StrCat(
          list_key, " has ", flags->size(), " entries, expected one per block (", all_layers, ")"));
    }
    for (int l = 0; l < c.n_layers; ++l) recurrent[l] = std::get<bool>((*flags)[l].data);
  } else {
    int64_t interval = spec.default_attention_interval;
    if (file.FindKey(p + "full_attention_interval")) {
      TEXTGEN_ASSIGN_OR_RETURN(interval, file.GetInt(p + "full_attention_interval", 1, kMaxLayers));
    }
    for (int l = 0; l < c.n_layers; ++l) recurrent[l] = (l + 1) % interval != 0;
  }
  c.layer_mixers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    c.layer_mixers[l] = !c.has_feed_forward(l) || !spec.single_sublayer_blocks
                            ? (recurrent[l] ? spec.recurrent_mixer : LayerMixer::kAttention)
                            : LayerMixer::kNone;
  }
  if (spec.single_sublayer_blocks && nextn > 0) c.feed_forward_layers.resize(c.n_layers);
  if (spec.recurrent_mixer == LayerMixer::kShortConv) return ReadShortConvConfig(file, p, c);
  if (spec.recurrent_mixer == LayerMixer::kMamba2) return ReadMamba2Config(file, p, c);
  DeltaNetShape& d = c.delta_net;
  const auto read = [&](const char* key, int& out) -> absl::Status {
    TEXTGEN_ASSIGN_OR_RETURN(const int64_t v, file.GetInt(p + key, 1, kMaxDim));
    out = static_cast<int>(v);
    return absl::OkStatus();
  };
  int inner = 0;
  TEXTGEN_RETURN_IF_ERROR(read("ssm.conv_kernel", d.conv_kernel));
  TEXTGEN_RETURN_IF_ERROR(read("ssm.state_size", d.head_k_dim));
  TEXTGEN_RETURN_IF_ERROR(read("ssm.group_count", d.k_heads));
  TEXTGEN_RETURN_IF_ERROR(read("ssm.time_step_rank", d.v_heads));
  TEXTGEN_RETURN_IF_ERROR(read("ssm.inner_size", inner));
  if (d.conv_kernel > kMaxConvKernel) {
    return absl::InvalidArgumentError(absl::StrCat(p, "ssm.conv_kernel ", d.conv_kernel,
                                                   " is past the supported ", kMaxConvKernel));
  }
  if (d.v_heads % d.k_heads != 0 || inner % d.v_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        p, "ssm.time_step_rank (value heads) ", d.v_heads, " must be a multiple of ", p,
        "ssm.group_count (key heads) ", d.k_heads, " and divide ", p, "ssm.inner_size ", inner));
  }
  d.head_v_dim = inner / d.v_heads;
  d.grouped_value_heads = spec.delta_net_layout == DeltaNetLayout::kQwen3Next;
  if (d.head_v_dim != d.head_k_dim) {
    return absl::UnimplementedError(absl::StrCat("value head size ", d.head_v_dim,
                                                 " differs from the key head size ", p,
                                                 "ssm.state_size ", d.head_k_dim));
  }
  return absl::OkStatus();
}

// Multimodal RoPE (rope.dimension_sections, interleaved as Qwen3.5's): a text token has one
// position in its first three sections and 0 in the fourth, so the rotation is the plain one
// as long as no rotated pair falls in the fourth. Refuses a layout where one does.
absl::Status CheckRopeSections(const GgufFile& file, const std::string& p, const ModelConfig& c) {
  const std::string key = p + "rope.dimension_sections";
  if (!file.FindKey(key)) return absl::OkStatus();
  // gguf-py writes int32; accept uint32 too.
  absl::StatusOr<const std::vector<GgufValue>*> array = file.GetArray(key, GgufType::kInt32);
  if (!array.ok()) array = file.GetArray(key, GgufType::kUint32);
  if (!array.ok()) return array.status();
  const std::vector<GgufValue>* values = *array;
  if (values->size() < 3 || values->size() > 4) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, " has ", values->size(), " entries, expected 3 or 4"));
  }
  int64_t sections[4] = {0, 0, 0, 0};
  int64_t total = 0;
  for (size_t i = 0; i < values->size(); ++i) {
    const auto& data = (*values)[i].data;
    sections[i] = std::holds_alternative<int64_t>(data)
                      ? std::get<int64_t>(data)
                      : static_cast<int64_t>(std::min<uint64_t>(std::get<uint64_t>(data), 1 << 20));
    if (sections[i] < 0 || sections[i] > c.rope_dim) {
      return absl::InvalidArgumentError(absl::StrCat(key, " entry ", sections[i], " is invalid"));
    }
    total += sections[i];
  }
  if (total <= 0) return absl::InvalidArgumentError(absl::StrCat(key, " sums to 0"));
  for (int pair = 0; pair < c.rope_dim / 2; ++pair) {
    const int64_t sector = pair % total;
    const bool text = (sector % 3 == 0 && sector < 3 * sections[0]) ||
                      (sector % 3 == 1 && sector < 3 * sections[1]) ||
                      (sector % 3 == 2 && sector < 3 * sections[2]);
    if (!text) {
      return absl::UnimplementedError(absl::StrCat(
          key, " puts rotated pair ", pair, " in the fourth section, which text does not move"));
    }
  }
  return absl::OkStatus();
}

// The hyperparameters under "<arch>.", as llama.cpp's converter writes them.
absl::StatusOr<ModelConfig> ReadConfig(const GgufFile& file, const ArchitectureSpec& spec) {
  ModelConfig c;
  c.architecture = spec.architecture;
  c.rope_layout = spec.rope_layout;
  const std::string p = std::string(spec.name) + ".";
  TEXTGEN_ASSIGN_OR_RETURN(c.dim, file.GetInt(p + "embedding_length", 1, kMaxDim));
  TEXTGEN_ASSIGN_OR_RETURN(c.n_layers, file.GetInt(p + "block_count", 1, kMaxLayers));
  if (spec.single_sublayer_blocks) {
    TEXTGEN_RETURN_IF_ERROR(ReadFeedForwardLayers(file, p, c));
  } else {
    TEXTGEN_ASSIGN_OR_RETURN(c.hidden_dim, file.GetInt(p + "feed_forward_length", 1, kMaxDim));
  }
  TEXTGEN_ASSIGN_OR_RETURN(c.n_heads, file.GetInt(p + "attention.head_count", 1, c.dim));
  TEXTGEN_ASSIGN_OR_RETURN(c.context_length, file.GetInt(p + "context_length", 1, kMaxContext));
  TEXTGEN_RETURN_IF_ERROR(ReadAttentionShape(file, p, c));
  TEXTGEN_RETURN_IF_ERROR(ReadRopeConfig(file, spec, p, c));
  TEXTGEN_RETURN_IF_ERROR(ReadNormEpsilon(file, spec, p, c));
  if (spec.granite_scales) TEXTGEN_RETURN_IF_ERROR(ReadGraniteScales(file, p, c));
  if (spec.gemma.enabled) TEXTGEN_RETURN_IF_ERROR(ReadGemmaConfig(file, spec, c));
  if (spec.sliding.pattern > 0) TEXTGEN_RETURN_IF_ERROR(ReadSlidingWindowConfig(file, spec, c));
  TEXTGEN_RETURN_IF_ERROR(ReadExpertConfig(file, spec, c));
  TEXTGEN_RETURN_IF_ERROR(ReadEmbeddingConfig(file, spec, p, c));
  if (spec.recurrent_mixer != LayerMixer::kAttention) {
    TEXTGEN_RETURN_IF_ERROR(ReadRecurrentConfig(file, spec, p, c));
    TEXTGEN_RETURN_IF_ERROR(CheckRopeSections(file, p, c));
  }
  return c;
}

// Reads `entry` and fills the weights it holds, splitting a fused tensor into its parts.
absl::Status ReadEntry(const TensorFetcher& f, const TensorEntry& entry, ModelWeights& w) {
  TEXTGEN_ASSIGN_OR_RETURN(const TensorView view,
                           entry.required
                               ? f.Required(entry.name, entry.rows, entry.cols, entry.experts)
                               : f.Optional(entry.name, entry.rows, entry.cols));
  if (view.empty()) return absl::OkStatus();
  if (entry.parts.size() == 1) {
    WeightOf(w, entry.layer, entry.parts[0].slot) = view;
    return absl::OkStatus();
  }
  int64_t begin = 0;
  for (const TensorPart& part : entry.parts) {
    TensorView& target = WeightOf(w, entry.layer, part.slot);
    if (entry.is_vector()) {
      TEXTGEN_ASSIGN_OR_RETURN(target, VectorSlice(view, entry.name, begin, part.rows));
    } else {
      target = RowsOf(view, begin, part.rows);
    }
    begin += part.rows;
  }
  return absl::OkStatus();
}

// Every tensor the architecture's table lists (model/arch/tensor_table.h).
absl::Status ReadWeights(const TensorFetcher& f, const ArchitectureSpec& spec, const ModelConfig& c,
                         ModelWeights& w) {
  w.layers.resize(c.n_layers);
  for (const TensorEntry& entry : GlobalTensorTable(spec, c)) {
    TEXTGEN_RETURN_IF_ERROR(ReadEntry(f, entry, w));
  }
  for (int l = 0; l < c.n_layers; ++l) {
    TensorLayout layout = FileLayoutOf(spec);
    // Some llama-architecture files fuse Q, K and V too (a Gated DeltaNet layer's attn_qkv is
    // its own); Qwen3-Next files converted before llama.cpp split ssm_in still carry it.
    const bool attention = c.mixer(l) == LayerMixer::kAttention;
    layout.fused_qkv =
        layout.fused_qkv || (attention && f.Has(absl::StrCat("blk.", l, ".attn_qkv.weight")));
    layout.fused_qkvz = spec.delta_net_layout == DeltaNetLayout::kQwen3Next &&
                        f.Has(absl::StrCat("blk.", l, ".ssm_in.weight"));
    for (const TensorEntry& entry : LayerTensorTable(spec, c, l, layout)) {
      TEXTGEN_RETURN_IF_ERROR(ReadEntry(f, entry, w));
    }
    const LayerWeights& L = w.layers[l];
    if (L.bq.empty() != L.bk.empty() || L.bq.empty() != L.bv.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "block ", l, " has some but not all of attn_q.bias, attn_k.bias, attn_v.bias"));
    }
  }
  if (w.rope_factors_long.empty() != w.rope_factors_short.empty()) {
    return absl::InvalidArgumentError(
        "rope_factors_long.weight and rope_factors_short.weight must come together");
  }
  return absl::OkStatus();
}

// The dtype holding most tensor bytes in the file (for GetModelInfo).
DType DominantDType(const GgufFile& file) {
  std::map<DType, uint64_t> bytes;
  for (const GgufTensorInfo& t : file.tensors) bytes[t.dtype] += t.nbytes;
  DType best = DType::kF32;
  uint64_t best_bytes = 0;
  for (const auto& [dtype, n] : bytes) {
    if (n > best_bytes) {
      best = dtype;
      best_bytes = n;
    }
  }
  return best;
}

}  // namespace

absl::StatusOr<LoadedModel> BuildModelFromGguf(const GgufFile& file,
                                               std::string_view fallback_name) {
  TEXTGEN_ASSIGN_OR_RETURN(const std::string arch, file.GetString("general.architecture"));
  const ArchitectureSpec* spec = FindArchitecture(arch);
  if (spec == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat("general.architecture \"", arch,
                     "\" is not supported (supported: ", SupportedArchitectureNames(), ")"));
  }
  LoadedModel model;
  TEXTGEN_ASSIGN_OR_RETURN(model.config, ReadConfig(file, *spec));
  ModelConfig& c = model.config;
  ModelWeights& w = model.weights;
  const TensorFetcher fetch(file);

  // The vocabulary size is the embedding's row count.
  const GgufTensorInfo* embd = file.FindTensor("token_embd.weight");
  if (embd == nullptr) return absl::NotFoundError("missing tensor token_embd.weight");
  if (embd->n_dims < 2 || embd->dims[1] > kMaxVocab) {
    return absl::InvalidArgumentError(absl::StrCat("tensor token_embd.weight: expected shape [",
                                                   c.dim, ", vocab], got ", DimsString(*embd)));
  }
  c.vocab_size = static_cast<int>(embd->dims[1]);
  TEXTGEN_RETURN_IF_ERROR(ReadWeights(fetch, *spec, c, w));
  if (w.output.empty() && !spec->encoder) {
    w.output = w.token_embedding;
    c.tied_output = true;
  }
  // Frequency divisors: Llama 3.1's rope_freqs, or LongRoPE's long set when the context served
  // (the model's whole context_length) exceeds the one it was trained at, as llama.cpp does.
  const TensorView* factors = &w.rope_freqs;
  if (factors->empty() && !w.rope_factors_long.empty()) {
    int64_t original_context = c.context_length;
    const std::string key = std::string(spec->name) + ".rope.scaling.original_context_length";
    if (file.FindKey(key)) {
      TEXTGEN_ASSIGN_OR_RETURN(original_context, file.GetInt(key, 1, kMaxContext));
    }
    factors = c.context_length > original_context ? &w.rope_factors_long : &w.rope_factors_short;
  }
  if (!factors->empty()) {
    c.rope_freq_factors.resize(static_cast<size_t>(factors->elements()));
    ToFloat(*factors, c.rope_freq_factors.data());
    for (float factor : c.rope_freq_factors) {
      if (!(factor > 0) || !std::isfinite(factor)) {
        return absl::InvalidArgumentError(
            absl::StrCat("RoPE frequency factor ", factor, " is not positive"));
      }
    }
  }
  TEXTGEN_ASSIGN_OR_RETURN(model.tokenizer, ReadGgufTokenizer(file, c.vocab_size));

  c.name = std::string(fallback_name);
  if (file.FindKey("general.name")) {
    TEXTGEN_ASSIGN_OR_RETURN(std::string name, file.GetString("general.name"));
    if (!name.empty()) c.name = std::move(name);
  }
  model.file_dtype = DominantDType(file);
  return model;
}

}  // namespace textgen::model
