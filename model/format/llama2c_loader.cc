#include "model/format/llama2c_loader.h"

#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/base/status_macros.h"
#include "model/tokenizer/llama2c_tokenizer_file.h"

namespace textgen::model {
namespace {

constexpr int32_t kMaxDim = 1 << 16;
constexpr int32_t kMaxLayers = 1024;
constexpr int32_t kMaxVocab = 1 << 22;
constexpr int32_t kMaxSeqLen = 1 << 20;

absl::Status CheckRange(const char* field, int32_t value, int32_t min, int32_t max) {
  if (value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat("llama2.c header: ", field, " = ", value,
                                                   " is not in [", min, ", ", max, "]"));
  }
  return absl::OkStatus();
}

absl::Status ValidateHeader(const Llama2cHeader& h) {
  TEXTGEN_RETURN_IF_ERROR(CheckRange("dim", h.dim, 1, kMaxDim));
  TEXTGEN_RETURN_IF_ERROR(CheckRange("hidden_dim", h.hidden_dim, 1, kMaxDim * 8));
  TEXTGEN_RETURN_IF_ERROR(CheckRange("n_layers", h.n_layers, 1, kMaxLayers));
  TEXTGEN_RETURN_IF_ERROR(CheckRange("n_heads", h.n_heads, 1, h.dim));
  TEXTGEN_RETURN_IF_ERROR(CheckRange("n_kv_heads", h.n_kv_heads, 1, h.n_heads));
  TEXTGEN_RETURN_IF_ERROR(CheckRange("seq_len", h.seq_len, 1, kMaxSeqLen));
  if (h.vocab_size == 0 || h.vocab_size < -kMaxVocab || h.vocab_size > kMaxVocab) {
    return absl::InvalidArgumentError(absl::StrCat("llama2.c header: vocab_size = ", h.vocab_size,
                                                   " is not in [-", kMaxVocab, ", ", kMaxVocab,
                                                   "] \\ {0}"));
  }
  if (h.dim % h.n_heads != 0 || (h.dim / h.n_heads) % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("llama2.c header: dim ", h.dim, " / n_heads ",
                                                   h.n_heads, " is not an even integer head size"));
  }
  if (h.n_heads % h.n_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "llama2.c header: n_heads ", h.n_heads, " is not a multiple of n_kv_heads ", h.n_kv_heads));
  }
  return absl::OkStatus();
}

// Hands out consecutive f32 arrays of the checkpoint, in file order.
class F32Walker {
 public:
  explicit F32Walker(const uint8_t* base) : base_(base) {}
  // Next `count` floats; returns the address of the first.
  const uint8_t* Take(int64_t count) {
    const uint8_t* p = base_ + offset_;
    offset_ += count * 4;
    return p;
  }
  int64_t offset() const { return offset_; }

 private:
  const uint8_t* base_;
  int64_t offset_ = 0;
};

TensorView F32View(const uint8_t* data, int64_t rows, int64_t cols) {
  return TensorView{DType::kF32, rows, cols, data};
}

// The tokenizer file that goes with `checkpoint`: explicit option, else a sibling file.
absl::StatusOr<std::string> FindTokenizer(const std::string& checkpoint, int vocab_size,
                                          const LoadOptions& options) {
  if (!options.tokenizer_path.empty()) return options.tokenizer_path;
  const std::filesystem::path dir = std::filesystem::path(checkpoint).parent_path();
  for (const std::string& candidate :
       {std::string("tokenizer.bin"), absl::StrCat("tok", vocab_size, ".bin")}) {
    std::error_code ec;
    const std::filesystem::path p = dir / candidate;
    if (std::filesystem::is_regular_file(p, ec)) return p.string();
  }
  return absl::NotFoundError(absl::StrCat(
      "llama2.c checkpoint ", checkpoint, " has no vocabulary: found neither tokenizer.bin nor tok",
      vocab_size, ".bin next to it; pass LoadOptions.tokenizer_path"));
}

}  // namespace

absl::StatusOr<Llama2cHeader> ReadLlama2cHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < kLlama2cHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat("llama2.c header: file has ", bytes.size(),
                                                   " bytes, the header needs ",
                                                   kLlama2cHeaderBytes));
  }
  int32_t f[7];
  std::memcpy(f, bytes.data(), sizeof(f));
  return Llama2cHeader{f[0], f[1], f[2], f[3], f[4], f[5], f[6]};
}

bool LooksLikeLlama2cHeader(const Llama2cHeader& header) { return ValidateHeader(header).ok(); }

absl::StatusOr<LoadedModel> BuildModelFromLlama2c(std::span<const uint8_t> bytes,
                                                  const std::string& name) {
  TEXTGEN_ASSIGN_OR_RETURN(const Llama2cHeader h, ReadLlama2cHeader(bytes));
  TEXTGEN_RETURN_IF_ERROR(ValidateHeader(h));
  LoadedModel model;
  ModelConfig& c = model.config;
  c.architecture = Architecture::kLlama;
  c.dim = h.dim;
  c.hidden_dim = h.hidden_dim;
  c.n_layers = h.n_layers;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.head_dim = h.dim / h.n_heads;
  c.vocab_size = h.vocab_size < 0 ? -h.vocab_size : h.vocab_size;
  c.context_length = h.seq_len;
  c.norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.rope_dim = c.head_dim;
  c.rope_layout = RopeLayout::kAdjacentPairs;
  c.tied_output = h.vocab_size > 0;
  c.name = name;

  // Exact size the header implies (int64: no overflow with the bounds above).
  const int64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, kv = c.kv_dim();
  const int64_t vocab = c.vocab_size;
  const int64_t freq_cis = int64_t{c.context_length} * c.head_dim / 2;
  const int64_t floats = vocab * dim +
                         layers * (2 * dim + 2 * dim * dim + 2 * kv * dim + 3 * hidden * dim) +
                         dim + 2 * freq_cis + (c.tied_output ? 0 : vocab * dim);
  const int64_t expected = static_cast<int64_t>(kLlama2cHeaderBytes) + floats * 4;
  if (static_cast<int64_t>(bytes.size()) != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "llama2.c checkpoint: file size ", bytes.size(), " does not match the ", expected,
        " bytes the header implies (dim=", h.dim, ", hidden_dim=", h.hidden_dim,
        ", n_layers=", h.n_layers, ", n_heads=", h.n_heads, ", n_kv_heads=", h.n_kv_heads,
        ", vocab_size=", h.vocab_size, ", seq_len=", h.seq_len, ")"));
  }

  // File order: embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final,
  // freq_cis_real, freq_cis_imag, [wcls]. Per-layer arrays are [n_layers, out, in].
  F32Walker walk(bytes.data() + kLlama2cHeaderBytes);
  ModelWeights& w = model.weights;
  w.token_embedding = F32View(walk.Take(vocab * dim), vocab, dim);
  w.layers.resize(c.n_layers);
  const auto per_layer = [&](int64_t rows, int64_t cols, TensorView LayerWeights::*field) {
    const uint8_t* base = walk.Take(layers * rows * cols);
    for (int64_t l = 0; l < layers; ++l) {
      w.layers[l].*field = F32View(base + l * rows * cols * 4, rows, cols);
    }
  };
  per_layer(1, dim, &LayerWeights::attn_norm);
  per_layer(dim, dim, &LayerWeights::wq);
  per_layer(kv, dim, &LayerWeights::wk);
  per_layer(kv, dim, &LayerWeights::wv);
  per_layer(dim, dim, &LayerWeights::wo);
  per_layer(1, dim, &LayerWeights::ffn_norm);
  per_layer(hidden, dim, &LayerWeights::w_gate);  // w1
  per_layer(dim, hidden, &LayerWeights::w_down);  // w2
  per_layer(hidden, dim, &LayerWeights::w_up);    // w3
  w.output_norm = F32View(walk.Take(dim), 1, dim);
  walk.Take(2 * freq_cis);  // legacy RoPE tables, recomputed by the engine
  w.output = c.tied_output ? w.token_embedding : F32View(walk.Take(vocab * dim), vocab, dim);
  model.file_dtype = DType::kF32;
  return model;
}

absl::StatusOr<LoadedModel> LoadLlama2cModel(std::shared_ptr<const MappedFile> file,
                                             const LoadOptions& options) {
  const std::string& path = file->path();
  auto model = BuildModelFromLlama2c(file->bytes(), std::filesystem::path(path).stem().string());
  if (!model.ok()) {
    return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
  }
  TEXTGEN_ASSIGN_OR_RETURN(const std::string tokenizer_path,
                           FindTokenizer(path, model->config.vocab_size, options));
  auto tokenizer = ReadLlama2cTokenizer(tokenizer_path, model->config.vocab_size);
  if (!tokenizer.ok()) {
    return absl::Status(tokenizer.status().code(),
                        absl::StrCat("tokenizer for llama2.c checkpoint ", path, ": ",
                                     tokenizer.status().message()));
  }
  model->tokenizer = *std::move(tokenizer);
  model->path = path;
  model->storage = std::move(file);
  return model;
}

}  // namespace textgen::model
