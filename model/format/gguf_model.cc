#include "model/format/gguf_model.h"

#include <cmath>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/arch/architectures.h"
#include "model/base/status_macros.h"
#include "model/format/block_formats.h"
#include "model/format/gguf_tokenizer.h"

namespace textgen::model {
namespace {

constexpr int64_t kMaxDim = 1 << 20;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxContext = 1 << 24;
constexpr int64_t kMaxVocab = 1 << 24;

std::string DimsString(const GgufTensorInfo& t) {
  return absl::StrCat("[", absl::StrJoin(t.dims.begin(), t.dims.begin() + t.n_dims, ", "), "]");
}

// Looks tensors up by name and checks their shapes. Shapes are given as (rows, cols) of the
// row-major matrix; GGUF stores them innermost-first, so the file says [cols, rows].
class TensorFetcher {
 public:
  explicit TensorFetcher(const GgufFile& file) : file_(file) {}

  absl::StatusOr<TensorView> Required(const std::string& name, int64_t rows, int64_t cols) const {
    const GgufTensorInfo* t = file_.FindTensor(name);
    if (t == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("missing tensor ", name, " (expected shape ", Expected(rows, cols), ")"));
    }
    return Check(*t, rows, cols);
  }

  bool Has(const std::string& name) const { return file_.FindTensor(name) != nullptr; }

  // Empty view when absent; shape-checked when present.
  absl::StatusOr<TensorView> Optional(const std::string& name, int64_t rows, int64_t cols) const {
    const GgufTensorInfo* t = file_.FindTensor(name);
    if (t == nullptr) return TensorView{};
    return Check(*t, rows, cols);
  }

 private:
  static std::string Expected(int64_t rows, int64_t cols) {
    return rows == 1 ? absl::StrCat("[", cols, "]") : absl::StrCat("[", cols, ", ", rows, "]");
  }

  absl::StatusOr<TensorView> Check(const GgufTensorInfo& t, int64_t rows, int64_t cols) const {
    // Trailing dims of 1 are accepted ([64, 1] for a vector).
    const bool ok = t.dims[0] == cols && t.dims[1] == rows && t.dims[2] == 1 && t.dims[3] == 1;
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", t.name, ": expected shape ",
                                                     Expected(rows, cols), ", got ", DimsString(t),
                                                     " (GGUF order, innermost first)"));
    }
    return TensorView{t.dtype, rows, cols, file_.TensorData(t)};
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
                                                    const GemmaTraits& gemma, int n_layers) {
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
  int64_t period = gemma.sliding_window_pattern;
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

// Gemma's embedding scale, attention scale, softcaps and sliding window, with llama.cpp's
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
  int64_t window = gemma.default_sliding_window;
  if (file.FindKey(p + "attention.sliding_window")) {
    TEXTGEN_ASSIGN_OR_RETURN(window, file.GetInt(p + "attention.sliding_window", 0, kMaxContext));
  }
  if (window == 0) return absl::OkStatus();  // every layer global
  c.sliding_window = static_cast<int>(window);
  TEXTGEN_ASSIGN_OR_RETURN(c.sliding_window_layers, ReadSlidingLayers(file, p, gemma, c.n_layers));
  c.rope_theta_local = gemma.local_rope_inherits_global ? c.rope_theta : 10000.0f;
  c.rope_freq_scale_local = gemma.local_rope_inherits_global ? c.rope_freq_scale : 1.0f;
  TEXTGEN_ASSIGN_OR_RETURN(c.rope_theta_local,
                           PositiveFloatOr(file, p + "rope.freq_base_swa", c.rope_theta_local));
  return absl::OkStatus();
}

// The hyperparameters under "<arch>.", as llama.cpp's converter writes them.
absl::StatusOr<ModelConfig> ReadConfig(const GgufFile& file, const ArchitectureSpec& spec) {
  ModelConfig c;
  c.architecture = spec.architecture;
  c.rope_layout = spec.rope_layout;
  const std::string p = std::string(spec.name) + ".";
  TEXTGEN_ASSIGN_OR_RETURN(c.dim, file.GetInt(p + "embedding_length", 1, kMaxDim));
  TEXTGEN_ASSIGN_OR_RETURN(c.hidden_dim, file.GetInt(p + "feed_forward_length", 1, kMaxDim));
  TEXTGEN_ASSIGN_OR_RETURN(c.n_layers, file.GetInt(p + "block_count", 1, kMaxLayers));
  TEXTGEN_ASSIGN_OR_RETURN(c.n_heads, file.GetInt(p + "attention.head_count", 1, c.dim));
  TEXTGEN_ASSIGN_OR_RETURN(c.context_length, file.GetInt(p + "context_length", 1, kMaxContext));
  c.n_kv_heads = c.n_heads;
  if (file.FindKey(p + "attention.head_count_kv")) {
    TEXTGEN_ASSIGN_OR_RETURN(c.n_kv_heads,
                             file.GetInt(p + "attention.head_count_kv", 1, c.n_heads));
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
  if (spec.learned_positions) {
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
      if (type == "linear") {
        TEXTGEN_ASSIGN_OR_RETURN(const double factor, file.GetFloat(p + "rope.scaling.factor"));
        if (!(factor >= 1 && factor <= 1024)) {
          return absl::InvalidArgumentError(
              absl::StrCat(p, "rope.scaling.factor ", factor, " is not in [1, 1024]"));
        }
        c.rope_freq_scale = static_cast<float>(1 / factor);
      } else if (type != "none") {
        return absl::UnimplementedError(absl::StrCat(
            p, "rope.scaling.type \"", type, "\" is not supported (supported: none, linear)"));
      }
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
  const std::string eps_key = spec.norm == NormKind::kRms ? p + "attention.layer_norm_rms_epsilon"
                                                          : p + "attention.layer_norm_epsilon";
  if (spec.norm == NormKind::kLayer || file.FindKey(eps_key)) {
    TEXTGEN_ASSIGN_OR_RETURN(const double eps, file.GetFloat(eps_key));
    if (!(eps > 0 && eps < 1)) {
      return absl::InvalidArgumentError(absl::StrCat(eps_key, " ", eps, " is not in (0, 1)"));
    }
    c.norm_eps = static_cast<float>(eps);
  }
  if (spec.gemma.enabled) TEXTGEN_RETURN_IF_ERROR(ReadGemmaConfig(file, spec, c));
  return c;
}

// The tensors of every block and the final norm, by the architecture's description.
absl::Status ReadWeights(const TensorFetcher& f, const ArchitectureSpec& spec, const ModelConfig& c,
                         ModelWeights& w) {
  const int64_t q_dim = int64_t{c.n_heads} * c.head_dim;
  const int64_t kv_dim = c.kv_dim();
  // Optional tensors become required where the architecture always has them.
  auto get = [&f](bool required, const std::string& name, int64_t rows, int64_t cols) {
    return required ? f.Required(name, rows, cols) : f.Optional(name, rows, cols);
  };
  if (spec.learned_positions) {
    TEXTGEN_ASSIGN_OR_RETURN(w.position_embedding,
                             f.Required("position_embd.weight", c.context_length, c.dim));
  }
  w.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[l];
    const std::string b = absl::StrCat("blk.", l, ".");
    const bool norm_bias = spec.norm == NormKind::kLayer;
    TEXTGEN_ASSIGN_OR_RETURN(L.attn_norm, f.Required(b + "attn_norm.weight", 1, c.dim));
    TEXTGEN_ASSIGN_OR_RETURN(L.attn_norm_bias, get(norm_bias, b + "attn_norm.bias", 1, c.dim));
    if (spec.fused_qkv || f.Has(b + "attn_qkv.weight")) {
      // One [q_dim + 2 kv_dim, dim] tensor (and bias), split into row ranges q | k | v.
      TEXTGEN_ASSIGN_OR_RETURN(const TensorView qkv,
                               f.Required(b + "attn_qkv.weight", q_dim + 2 * kv_dim, c.dim));
      L.wq = RowsOf(qkv, 0, q_dim);
      L.wk = RowsOf(qkv, q_dim, kv_dim);
      L.wv = RowsOf(qkv, q_dim + kv_dim, kv_dim);
      const std::string bias_name = b + "attn_qkv.bias";
      TEXTGEN_ASSIGN_OR_RETURN(const TensorView qkv_bias,
                               get(spec.attention_bias, bias_name, 1, q_dim + 2 * kv_dim));
      if (!qkv_bias.empty()) {
        TEXTGEN_ASSIGN_OR_RETURN(L.bq, VectorSlice(qkv_bias, bias_name, 0, q_dim));
        TEXTGEN_ASSIGN_OR_RETURN(L.bk, VectorSlice(qkv_bias, bias_name, q_dim, kv_dim));
        TEXTGEN_ASSIGN_OR_RETURN(L.bv, VectorSlice(qkv_bias, bias_name, q_dim + kv_dim, kv_dim));
      }
    } else {
      TEXTGEN_ASSIGN_OR_RETURN(L.wq, f.Required(b + "attn_q.weight", q_dim, c.dim));
      TEXTGEN_ASSIGN_OR_RETURN(L.wk, f.Required(b + "attn_k.weight", kv_dim, c.dim));
      TEXTGEN_ASSIGN_OR_RETURN(L.wv, f.Required(b + "attn_v.weight", kv_dim, c.dim));
      TEXTGEN_ASSIGN_OR_RETURN(L.bq, get(spec.attention_bias, b + "attn_q.bias", 1, q_dim));
      TEXTGEN_ASSIGN_OR_RETURN(L.bk, get(spec.attention_bias, b + "attn_k.bias", 1, kv_dim));
      TEXTGEN_ASSIGN_OR_RETURN(L.bv, get(spec.attention_bias, b + "attn_v.bias", 1, kv_dim));
      if (L.bq.empty() != L.bk.empty() || L.bq.empty() != L.bv.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "block ", l, " has some but not all of attn_q.bias, attn_k.bias, attn_v.bias"));
      }
    }
    if (spec.qk_norm) {
      TEXTGEN_ASSIGN_OR_RETURN(L.q_norm, f.Required(b + "attn_q_norm.weight", 1, c.head_dim));
      TEXTGEN_ASSIGN_OR_RETURN(L.k_norm, f.Required(b + "attn_k_norm.weight", 1, c.head_dim));
    }
    TEXTGEN_ASSIGN_OR_RETURN(L.wo, f.Required(b + "attn_output.weight", c.dim, q_dim));
    TEXTGEN_ASSIGN_OR_RETURN(L.bo, get(spec.output_bias, b + "attn_output.bias", 1, c.dim));
    TEXTGEN_ASSIGN_OR_RETURN(L.ffn_norm, f.Required(b + "ffn_norm.weight", 1, c.dim));
    TEXTGEN_ASSIGN_OR_RETURN(L.ffn_norm_bias, get(norm_bias, b + "ffn_norm.bias", 1, c.dim));
    if (spec.fused_gate_up) {
      // One [2 hidden, dim] tensor: rows gate | up.
      TEXTGEN_ASSIGN_OR_RETURN(const TensorView gate_up,
                               f.Required(b + "ffn_up.weight", 2 * int64_t{c.hidden_dim}, c.dim));
      L.w_gate = RowsOf(gate_up, 0, c.hidden_dim);
      L.w_up = RowsOf(gate_up, c.hidden_dim, c.hidden_dim);
    } else {
      if (spec.feed_forward != FeedForwardKind::kGelu) {
        TEXTGEN_ASSIGN_OR_RETURN(L.w_gate, f.Required(b + "ffn_gate.weight", c.hidden_dim, c.dim));
      }
      TEXTGEN_ASSIGN_OR_RETURN(L.w_up, f.Required(b + "ffn_up.weight", c.hidden_dim, c.dim));
    }
    TEXTGEN_ASSIGN_OR_RETURN(L.b_up, get(spec.output_bias, b + "ffn_up.bias", 1, c.hidden_dim));
    TEXTGEN_ASSIGN_OR_RETURN(L.w_down, f.Required(b + "ffn_down.weight", c.dim, c.hidden_dim));
    TEXTGEN_ASSIGN_OR_RETURN(L.b_down, get(spec.output_bias, b + "ffn_down.bias", 1, c.dim));
    if (spec.post_norms) {
      TEXTGEN_ASSIGN_OR_RETURN(L.attn_post_norm,
                               f.Required(b + "post_attention_norm.weight", 1, c.dim));
      TEXTGEN_ASSIGN_OR_RETURN(L.ffn_post_norm, f.Required(b + "post_ffw_norm.weight", 1, c.dim));
    }
  }
  TEXTGEN_ASSIGN_OR_RETURN(w.output_norm, f.Required("output_norm.weight", 1, c.dim));
  TEXTGEN_ASSIGN_OR_RETURN(w.output_norm_bias,
                           get(spec.norm == NormKind::kLayer, "output_norm.bias", 1, c.dim));
  if (spec.rope_freq_factors) {
    TEXTGEN_ASSIGN_OR_RETURN(w.rope_freqs, f.Optional("rope_freqs.weight", 1, c.rope_dim / 2));
    TEXTGEN_ASSIGN_OR_RETURN(w.rope_factors_long,
                             f.Optional("rope_factors_long.weight", 1, c.rope_dim / 2));
    TEXTGEN_ASSIGN_OR_RETURN(w.rope_factors_short,
                             f.Optional("rope_factors_short.weight", 1, c.rope_dim / 2));
    if (w.rope_factors_long.empty() != w.rope_factors_short.empty()) {
      return absl::InvalidArgumentError(
          "rope_factors_long.weight and rope_factors_short.weight must come together");
    }
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
  TEXTGEN_ASSIGN_OR_RETURN(w.token_embedding,
                           fetch.Required("token_embd.weight", c.vocab_size, c.dim));
  TEXTGEN_ASSIGN_OR_RETURN(w.output, fetch.Optional("output.weight", c.vocab_size, c.dim));
  if (w.output.empty()) {
    w.output = w.token_embedding;
    c.tied_output = true;
  }
  TEXTGEN_RETURN_IF_ERROR(ReadWeights(fetch, *spec, c, w));
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
