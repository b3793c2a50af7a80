#include "tests/tools/random_gguf.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/arch/architectures.h"
#include "model/arch/tensor_table.h"
#include "model/base/status_macros.h"
#include "model/tokenizer/llama2c_tokenizer_file.h"
#include "tests/tools/random_quant_blocks.h"

namespace textgen::model {
namespace {

constexpr char kSpace[] = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string Utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// GPT-2's bytes_to_unicode(): printable bytes map to themselves, the rest to U+0100 + n.
std::vector<std::string> Gpt2ByteTokens() {
  std::vector<std::string> tokens;
  std::vector<bool> printable(256, false);
  for (int b = 0; b < 256; ++b) {
    printable[b] = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  }
  for (int b = 0; b < 256; ++b) {
    if (printable[b]) tokens.push_back(Utf8(b));
  }
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    if (!printable[b]) tokens.push_back(Utf8(256 + n++));
  }
  return tokens;
}

// Grows `tokens` to `target` entries by appending lowercase letters to existing multi-piece
// tokens (in creation order), so every new token is the concatenation of two existing ones.
// `on_new(left, right)` is told each (left, right) pair.
template <typename OnNew>
void GrowByConcatenation(std::vector<std::string>& tokens, size_t first_stem, size_t target,
                         OnNew on_new) {
  static constexpr char kLetters[] = "etaoinshrdlucmfwypvbgkjqxz";
  std::set<std::string> seen(tokens.begin(), tokens.end());
  for (size_t stem = first_stem; tokens.size() < target && stem < tokens.size(); ++stem) {
    for (const char* c = kLetters; *c != '\0' && tokens.size() < target; ++c) {
      const std::string right(1, *c);
      std::string candidate = tokens[stem] + right;
      if (!seen.insert(candidate).second) continue;
      on_new(tokens[stem], right);
      tokens.push_back(std::move(candidate));
    }
  }
}

void AddTokenizerMetadata(GgufWriter& w, const TokenizerData& t) {
  const bool gpt2 = t.kind == TokenizerData::Kind::kGpt2ByteBpe;
  const bool bert = t.kind == TokenizerData::Kind::kWordPiece;
  w.AddMetadata("tokenizer.ggml.model", GgufValue::String(gpt2 ? "gpt2" : bert ? "bert" : "llama"));
  w.AddMetadata("tokenizer.ggml.pre", GgufValue::String(gpt2 ? "gpt-2" : "default"));
  w.AddMetadata("tokenizer.ggml.tokens", GgufValue::StringArray(t.tokens));
  if (!t.scores.empty()) w.AddMetadata("tokenizer.ggml.scores", GgufValue::Float32Array(t.scores));
  if (!t.token_types.empty()) {
    w.AddMetadata("tokenizer.ggml.token_type", GgufValue::Int32Array(t.token_types));
  }
  if (!t.merges.empty()) w.AddMetadata("tokenizer.ggml.merges", GgufValue::StringArray(t.merges));
  const auto add_id = [&](const char* key, int id) {
    if (id >= 0) w.AddMetadata(key, GgufValue::Uint32(static_cast<uint32_t>(id)));
  };
  add_id("tokenizer.ggml.bos_token_id", t.bos_id);
  add_id("tokenizer.ggml.eos_token_id", t.eos_id);
  add_id("tokenizer.ggml.unknown_token_id", t.unk_id);
  add_id("tokenizer.ggml.padding_token_id", t.pad_id);
  add_id("tokenizer.ggml.seperator_token_id", t.sep_id);  // llama.cpp's spelling
  w.AddMetadata("tokenizer.ggml.add_bos_token", GgufValue::Bool(t.add_bos));
  w.AddMetadata("tokenizer.ggml.add_eos_token", GgufValue::Bool(false));
}

// llama.cpp's general.file_type (LLAMA_FTYPE_*) for a file whose matrices are `dtype`.
uint32_t FileType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 0;
    case DType::kF16:
      return 1;
    case DType::kQ8_0:
      return 7;
    case DType::kBF16:
      return 32;
    case DType::kQ4_0:
      return 2;
    case DType::kQ4_1:
      return 3;
    case DType::kQ5_0:
      return 8;
    case DType::kQ5_1:
      return 9;
    case DType::kQ4_K:
      return 15;  // Q4_K_M
    case DType::kQ5_K:
      return 17;  // Q5_K_M
    case DType::kQ6_K:
      return 18;
    case DType::kMXFP4:
      return 38;  // MXFP4_MOE
    default:
      return 0;
  }
}

LayerMixer MixerOf(const RandomModelSpec& s, int layer);

// The layers with an attn_v or attn_qkv tensor: attention and Gated DeltaNet layers.
std::vector<bool> ValueLayers(const RandomModelSpec& s) {
  std::vector<bool> layers(static_cast<size_t>(s.n_layers));
  for (int l = 0; l < s.n_layers; ++l) {
    const LayerMixer mixer = MixerOf(s, l);
    layers[l] = mixer == LayerMixer::kAttention || mixer == LayerMixer::kGatedDeltaNet;
  }
  return layers;
}

bool HasFeedForward(const RandomModelSpec& s, int layer);

// The layers with an ffn_down or ffn_down_exps tensor.
std::vector<bool> FeedForwardLayers(const RandomModelSpec& s) {
  std::vector<bool> layers(static_cast<size_t>(s.n_layers));
  for (int l = 0; l < s.n_layers; ++l) layers[l] = HasFeedForward(s, l);
  return layers;
}

// Adds random tensors; matrices take spec.dtype (or the type spec.mix gives them), vectors stay
// F32.
class TensorMaker {
 public:
  TensorMaker(GgufWriter& writer, const RandomModelSpec& spec)
      : writer_(writer),
        dtype_(spec.dtype),
        mix_(spec.mix),
        mix_shape_{.n_layers = spec.n_layers,
                   .n_experts = spec.experts,
                   .has_output = !spec.tied_output,
                   .value_layers = ValueLayers(spec),
                   .ffn_down_layers = FeedForwardLayers(spec)},
        rng_(spec.seed),
        normal_(0.0f, 0.02f) {}

  // dims in GGUF order (innermost first).
  absl::Status Random(const std::string& name, std::vector<int64_t> dims) {
    std::vector<float> v(Elements(dims));
    for (float& x : v) x = normal_(rng_);
    return Add(name, std::move(dims), v);
  }
  absl::Status Constant(const std::string& name, std::vector<int64_t> dims, float value) {
    const std::vector<float> v(Elements(dims), value);
    return Add(name, std::move(dims), v);
  }

 private:
  static size_t Elements(const std::vector<int64_t>& dims) {
    size_t n = 1;
    for (int64_t d : dims) n *= static_cast<size_t>(d);
    return n;
  }
  absl::Status Add(const std::string& name, std::vector<int64_t> dims,
                   const std::vector<float>& v) {
    // Vectors and biases (the experts' are 2-D), and the tables llama.cpp's converter always
    // keeps in f32 (it adds their rows to f32 activations directly), stay f32.
    const bool f32 = dims.size() == 1 || absl::EndsWith(name, ".bias") ||
                     name == "position_embd.weight" || name == "token_types.weight" ||
                     absl::EndsWith(name, "ffn_gate_inp.weight") ||
                     // llama.cpp never quantizes the convolutions (rows of a few taps), norms, nor
                     // tensors not named *weight (Mamba2's [heads, 1] ssm_a and ssm_d)
                     absl::EndsWith(name, "ssm_conv1d.weight") ||
                     absl::EndsWith(name, "shortconv.conv.weight") ||
                     absl::StrContains(name, "_norm.weight") || !absl::EndsWith(name, "weight");
    const DType dtype =
        f32 ? DType::kF32
            : MixedTensorType(mix_, dtype_, mix_shape_, name, dims[0], dims.size() == 3);
    switch (dtype) {
      case DType::kF32:
      case DType::kF16:
      case DType::kBF16:
      case DType::kQ8_0:
        return writer_.AddFloatTensor(name, dtype, std::move(dims), v);
      default: {
        // No quantizer here for the other block types: random blocks of about the same
        // magnitude as the f32 weights.
        const int64_t cols = dims[0];
        const int64_t rows = static_cast<int64_t>(v.size()) / cols;
        std::vector<uint8_t> blocks = testing::RandomQuantBlocks(
            dtype, rows, cols, static_cast<uint32_t>(rng_()), /*typical=*/0.02f);
        return writer_.AddTensor(name, dtype, std::move(dims), std::move(blocks));
      }
    }
  }

  GgufWriter& writer_;
  DType dtype_;
  QuantMix mix_;
  QuantMixShape mix_shape_;
  std::mt19937_64 rng_;
  std::normal_distribution<float> normal_;
};

// Encoders embed two token types ("sentence A" and "B"), as BERT's checkpoints do.
constexpr int kTokenTypes = 2;

int HeadDim(const RandomModelSpec& s) { return s.head_dim > 0 ? s.head_dim : s.dim / s.n_heads; }

bool IsHybrid(const RandomModelSpec& s) {
  return SpecOf(s.architecture).recurrent_mixer != LayerMixer::kAttention;
}

LayerMixer RecurrentMixerOf(const RandomModelSpec& s) {
  return SpecOf(s.architecture).recurrent_mixer;
}

// Qwen's hybrids rotate a quarter of each head, as Qwen3.5 does; the rest the whole head.
int RopeDim(const RandomModelSpec& s) {
  return RecurrentMixerOf(s) == LayerMixer::kGatedDeltaNet ? HeadDim(s) / 4 : HeadDim(s);
}

// Nemotron-H's blocks: even ones mixers, odd ones feed-forwards.
bool HasFeedForward(const RandomModelSpec& s, int layer) {
  return !SpecOf(s.architecture).single_sublayer_blocks || layer % 2 == 1;
}

bool IsRecurrentLayer(const RandomModelSpec& s, int layer) {
  if (SpecOf(s.architecture).single_sublayer_blocks) {
    return layer % 2 == 0 && (layer / 2 + 1) % s.full_attention_interval != 0;
  }
  return IsHybrid(s) && (layer + 1) % s.full_attention_interval != 0;
}

LayerMixer MixerOf(const RandomModelSpec& s, int layer) {
  if (SpecOf(s.architecture).single_sublayer_blocks && HasFeedForward(s, layer)) {
    return LayerMixer::kNone;
  }
  return IsRecurrentLayer(s, layer) ? RecurrentMixerOf(s) : LayerMixer::kAttention;
}

// Writes the layer kinds as llama.cpp's converters do: per-layer attention.head_count_kv (0: not
// attention), and for Nemotron-H per-layer feed_forward_length (0: not a feed-forward).
bool PerLayerKvHeads(const RandomModelSpec& s) {
  return IsHybrid(s) && SpecOf(s.architecture).default_attention_interval == 0;
}

// A Mamba2 hybrid's recurrent layers: the spec's shape, else as RandomModelSpec says.
Mamba2Shape Mamba2Of(const RandomModelSpec& s) {
  Mamba2Shape m = s.mamba2;
  if (m.conv_kernel == 0) m.conv_kernel = 4;
  if (m.inner == 0) m.inner = 2 * s.dim;
  if (m.state == 0) m.state = 16;
  if (m.heads == 0) m.heads = m.inner / 16;
  if (m.groups == 0) m.groups = m.heads % 2 == 0 ? 2 : 1;
  return m;
}

// A hybrid's recurrent layers: the spec's shape, else key heads of the head size, twice as many
// value heads (so value heads share key heads), a 4-wide convolution.
DeltaNetShape DeltaNetOf(const RandomModelSpec& s) {
  DeltaNetShape d = s.delta_net;
  if (d.conv_kernel == 0) d.conv_kernel = 4;
  if (d.k_heads == 0) d.k_heads = s.n_kv_heads;
  if (d.v_heads == 0) d.v_heads = 2 * d.k_heads;
  if (d.head_k_dim == 0) d.head_k_dim = HeadDim(s);
  d.head_v_dim = d.head_k_dim;
  d.grouped_value_heads = SpecOf(s.architecture).delta_net_layout == DeltaNetLayout::kQwen3Next;
  return d;
}

// The dimensions the architecture's tensor table reads.
ModelConfig TableConfig(const RandomModelSpec& s) {
  ModelConfig c;
  c.architecture = s.architecture;
  c.dim = s.dim;
  c.hidden_dim = s.hidden_dim;
  c.n_layers = s.n_layers;
  c.n_heads = s.n_heads;
  c.n_kv_heads = s.n_kv_heads;
  c.head_dim = HeadDim(s);
  c.rope_dim = RopeDim(s);
  if (IsHybrid(s)) {
    c.delta_net = DeltaNetOf(s);
    c.mamba2 = Mamba2Of(s);
    c.short_conv_kernel = s.short_conv_kernel;
    for (int l = 0; l < s.n_layers; ++l) {
      c.layer_mixers.push_back(MixerOf(s, l));
      if (SpecOf(s.architecture).single_sublayer_blocks) {
        c.feed_forward_layers.push_back(HasFeedForward(s, l));
      }
    }
  }
  c.vocab_size = s.vocab_size;
  c.context_length = s.context_length;
  c.token_type_count = kTokenTypes;
  c.experts = s.experts;
  c.experts_used = s.experts_used;
  // As the loader derives it when expert_feed_forward_length is not written.
  const bool divides = SpecOf(s.architecture).experts.width_divides_by_used;
  c.expert_hidden_dim = s.expert_hidden_dim > 0         ? s.expert_hidden_dim
                        : divides && s.experts_used > 0 ? s.hidden_dim / s.experts_used
                                                        : s.hidden_dim;
  // The shared expert (qwen35moe, nemotron_h_moe) as wide as feed_forward_length: the loader's
  // default (Granite's is written only when it has one: none here).
  const SharedExpert shared = SpecOf(s.architecture).experts.shared_expert;
  if (shared == SharedExpert::kGated || shared == SharedExpert::kAlways) {
    c.shared_expert_hidden_dim = s.hidden_dim;
  }
  c.leading_dense_layers = s.leading_dense_layers;
  return c;
}

// Writes `entry` when the architecture requires it (and output.weight when untied).
absl::Status AddEntry(TensorMaker& m, const RandomModelSpec& s, const TensorEntry& entry) {
  const WeightSlot slot = entry.parts.front().slot;
  const bool untied_output = slot == WeightSlot::kOutput && !s.tied_output;
  // Optional tensors the real files carry: BERT's token types, Mamba2's convolution bias
  // (llama.cpp's Mamba2 graph needs it whatever its loader says).
  const bool written_optional = slot == WeightSlot::kTokenTypes || slot == WeightSlot::kSsmConvBias;
  if (!entry.required && !untied_output && !written_optional) {
    return absl::OkStatus();
  }
  std::vector<int64_t> dims = entry.is_vector() ? std::vector<int64_t>{entry.cols}
                                                : std::vector<int64_t>{entry.cols, entry.rows};
  if (entry.experts > 1) dims.push_back(entry.experts);
  switch (entry.init) {
    case TensorInit::kOnes:
      return m.Constant(entry.name, std::move(dims), 1.0f);
    case TensorInit::kZeros:
      return m.Constant(entry.name, std::move(dims), 0.0f);
    case TensorInit::kMinusOnes:
      return m.Constant(entry.name, std::move(dims), -1.0f);
    case TensorInit::kRandom:
      break;
  }
  return m.Random(entry.name, std::move(dims));
}

// Every tensor of the architecture's table, in file order.
absl::Status AddTensors(TensorMaker& m, const RandomModelSpec& s) {
  const ArchitectureSpec& arch = SpecOf(s.architecture);
  const ModelConfig c = TableConfig(s);
  const std::vector<TensorEntry> global = GlobalTensorTable(arch, c);
  const auto leading = global.begin() + LeadingTensorCount(arch);
  for (auto it = global.begin(); it != leading; ++it) {
    TEXTGEN_RETURN_IF_ERROR(AddEntry(m, s, *it));
  }
  for (int l = 0; l < s.n_layers; ++l) {
    for (const TensorEntry& entry : LayerTensorTable(arch, c, l, FileLayoutOf(arch))) {
      TEXTGEN_RETURN_IF_ERROR(AddEntry(m, s, entry));
    }
  }
  for (auto it = leading; it != global.end(); ++it) TEXTGEN_RETURN_IF_ERROR(AddEntry(m, s, *it));
  return absl::OkStatus();
}

absl::Status ValidateSpec(const RandomModelSpec& s) {
  const bool positive = s.dim > 0 && s.hidden_dim > 0 && s.n_layers > 0 && s.n_heads > 0 &&
                        s.n_kv_heads > 0 && s.vocab_size > 0 && s.context_length > 0;
  if (!positive) return absl::InvalidArgumentError("every model dimension must be positive");
  if (s.head_dim > 0 ? s.head_dim % 2 != 0 || s.architecture == Architecture::kGpt2
                     : s.dim % s.n_heads != 0 || (s.dim / s.n_heads) % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dim ", s.dim, " must be n_heads ", s.n_heads,
                     " x an even head size, or an even head_dim must be given (not for gpt2)"));
  }
  if (s.n_heads % s.n_kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("n_heads ", s.n_heads, " must be a multiple of n_kv_heads ", s.n_kv_heads));
  }
  const ExpertTraits& experts = SpecOf(s.architecture).experts;
  if (s.experts > 0 ? !experts.allowed || s.experts_used < 1 || s.experts_used > s.experts
                    : experts.required) {
    return absl::InvalidArgumentError(absl::StrCat(
        SpecOf(s.architecture).name, ": ", s.experts, " experts, ", s.experts_used,
        " per token (a mixture of experts needs 1 <= used <= experts, in llama, qwen3moe or "
        "gpt-oss; qwen3moe and gpt-oss need one)"));
  }
  return absl::OkStatus();
}

}  // namespace

RandomModelSpec QuantizedModelSpec(DType dtype, bool k_quant_mix) {
  RandomModelSpec spec;
  spec.dim = 256;
  spec.hidden_dim = 512;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.head_dim = 64;
  spec.vocab_size = 512;
  spec.tied_output = false;
  spec.dtype = dtype;
  if (k_quant_mix) spec.mix = QuantMix::kKQuantMedium;
  return spec;
}

absl::StatusOr<RandomModelSpec> RandomModelPreset(const std::string& preset, Architecture arch) {
  RandomModelSpec s;
  s.architecture = arch;
  s.name = preset;
  if (preset == "stories15M") {
    s.dim = 288, s.hidden_dim = 768, s.n_layers = 6, s.n_heads = 6, s.n_kv_heads = 6;
    s.vocab_size = 32000, s.context_length = 256;
  } else if (preset == "stories110M") {
    s.dim = 768, s.hidden_dim = 2048, s.n_layers = 12, s.n_heads = 12, s.n_kv_heads = 12;
    s.vocab_size = 32000, s.context_length = 1024;
  } else if (preset == "tiny") {
    s.dim = 64, s.hidden_dim = 160, s.n_layers = 2, s.n_heads = 4, s.n_kv_heads = 2;
    s.vocab_size = 300, s.context_length = 128;
  } else if (preset == "bert-base") {
    s.dim = 768, s.hidden_dim = 3072, s.n_layers = 12, s.n_heads = 12, s.n_kv_heads = 12;
    s.vocab_size = 30522, s.context_length = 512;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown preset \"", preset, "\" (stories15M, stories110M, tiny, bert-base)"));
  }
  if (arch == Architecture::kGpt2 || SpecOf(arch).encoder) s.n_kv_heads = s.n_heads;
  if (SpecOf(arch).experts.required) {
    s.experts = 8, s.experts_used = 2, s.expert_hidden_dim = s.hidden_dim / 2;
  }
  return s;
}

absl::StatusOr<TokenizerData> SyntheticSentencePieceVocab(int vocab_size) {
  if (vocab_size < 260) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a SentencePiece-style vocabulary needs >= 260 tokens (3 special + 256 bytes + 1), got ",
        vocab_size));
  }
  TokenizerData t;
  t.kind = TokenizerData::Kind::kSentencePieceBpe;
  t.tokens = {"<unk>", "<s>", "</s>"};
  t.token_types = {TokenizerData::kUnknown, TokenizerData::kControl, TokenizerData::kControl};
  for (int b = 0; b < 256; ++b) {
    t.tokens.push_back(absl::StrFormat("<0x%02X>", b));
    t.token_types.push_back(TokenizerData::kByte);
  }
  const size_t first_piece = t.tokens.size();
  t.tokens.push_back(kSpace);
  for (char c = 'a'; c <= 'z'; ++c) t.tokens.push_back(std::string(1, c));
  for (const char* p = ".,!?'\"-:;()0123456789"; *p != '\0'; ++p) t.tokens.push_back({*p});
  const size_t first_stem = t.tokens.size();
  for (char c = 'a'; c <= 'z'; ++c) t.tokens.push_back(kSpace + std::string(1, c));
  t.tokens.resize(std::min<size_t>(t.tokens.size(), vocab_size));
  GrowByConcatenation(t.tokens, first_stem, vocab_size, [](const auto&, const auto&) {});
  if (static_cast<int>(t.tokens.size()) != vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("cannot make ", vocab_size, " distinct tokens"));
  }
  t.scores.assign(first_piece, 0.0f);
  for (size_t i = first_piece; i < t.tokens.size(); ++i) {
    t.scores.push_back(-static_cast<float>(i - first_piece));
    t.token_types.push_back(TokenizerData::kNormal);
  }
  t.unk_id = 0, t.bos_id = 1, t.eos_id = 2;
  t.add_bos = true;
  return t;
}

absl::StatusOr<TokenizerData> SyntheticGpt2Vocab(int vocab_size) {
  if (vocab_size < 258) {
    return absl::InvalidArgumentError(
        absl::StrCat("a GPT-2 byte-level vocabulary needs >= 258 tokens (256 bytes + a merge + "
                     "<|endoftext|>), got ",
                     vocab_size));
  }
  TokenizerData t;
  t.kind = TokenizerData::Kind::kGpt2ByteBpe;
  t.tokens = Gpt2ByteTokens();
  const std::string space = Utf8(0x120);  // "Ġ", GPT-2's image of the byte ' '
  // Stems: "Ġ" + letter first (the most useful merges), then letter pairs grow from those.
  const size_t first_stem = t.tokens.size();
  for (char c = 'a'; c <= 'z' && static_cast<int>(t.tokens.size()) < vocab_size - 1; ++c) {
    t.merges.push_back(space + " " + std::string(1, c));
    t.tokens.push_back(space + std::string(1, c));
  }
  GrowByConcatenation(
      t.tokens, first_stem, vocab_size - 1,
      [&](const std::string& l, const std::string& r) { t.merges.push_back(l + " " + r); });
  t.tokens.push_back("<|endoftext|>");
  if (static_cast<int>(t.tokens.size()) != vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("cannot make ", vocab_size, " distinct tokens"));
  }
  t.token_types.assign(t.tokens.size(), TokenizerData::kNormal);
  t.token_types.back() = TokenizerData::kControl;
  t.bos_id = t.eos_id = vocab_size - 1;
  t.add_bos = false;
  return t;
}

absl::StatusOr<TokenizerData> SyntheticWordPieceVocab(int vocab_size) {
  if (vocab_size < 128) {
    return absl::InvalidArgumentError(
        absl::StrCat("a WordPiece vocabulary needs >= 128 tokens, got ", vocab_size));
  }
  TokenizerData t;
  t.kind = TokenizerData::Kind::kWordPiece;
  t.tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  t.token_types.assign(t.tokens.size(), TokenizerData::kControl);
  const size_t first_word = t.tokens.size();
  for (char c = 'a'; c <= 'z'; ++c) t.tokens.push_back(kSpace + std::string(1, c));
  for (char c = 'a'; c <= 'z'; ++c) t.tokens.push_back(std::string(1, c));
  for (const char* p = ".,!?'\"-:;()0123456789"; *p != '\0'; ++p) {
    t.tokens.push_back(kSpace + std::string(1, *p));
  }
  GrowByConcatenation(t.tokens, first_word, vocab_size, [](const auto&, const auto&) {});
  if (static_cast<int>(t.tokens.size()) != vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("cannot make ", vocab_size, " distinct tokens"));
  }
  t.token_types.resize(t.tokens.size(), TokenizerData::kNormal);
  t.pad_id = 0, t.unk_id = 1, t.bos_id = 2, t.sep_id = 3;
  t.add_bos = true;
  t.add_sep = true;
  return t;
}

absl::StatusOr<GgufWriter> BuildRandomModel(const RandomModelSpec& spec) {
  TEXTGEN_RETURN_IF_ERROR(ValidateSpec(spec));
  const ArchitectureSpec& arch_spec = SpecOf(spec.architecture);
  const bool gpt2 = spec.architecture == Architecture::kGpt2;
  TokenizerData vocab;
  if (!spec.vocab_metadata.empty()) {
    // Written as given below.
  } else if (!spec.tokenizer_path.empty()) {
    TEXTGEN_ASSIGN_OR_RETURN(vocab, ReadLlama2cTokenizer(spec.tokenizer_path, spec.vocab_size));
  } else {
    TEXTGEN_ASSIGN_OR_RETURN(vocab, gpt2 ? SyntheticGpt2Vocab(spec.vocab_size)
                                    : arch_spec.encoder
                                        ? SyntheticWordPieceVocab(spec.vocab_size)
                                        : SyntheticSentencePieceVocab(spec.vocab_size));
  }
  GgufWriter w;
  const std::string arch = ArchitectureName(spec.architecture);
  w.AddMetadata("general.architecture", GgufValue::String(arch));
  w.AddMetadata("general.name", GgufValue::String(spec.name));
  w.AddMetadata("general.file_type", GgufValue::Uint32(FileType(spec.dtype)));
  const std::string p = arch + ".";
  w.AddMetadata(p + "context_length", GgufValue::Uint32(spec.context_length));
  w.AddMetadata(p + "embedding_length", GgufValue::Uint32(spec.dim));
  if (arch_spec.single_sublayer_blocks) {
    std::vector<GgufValue> widths;
    for (int l = 0; l < spec.n_layers; ++l) {
      widths.push_back(GgufValue::Int32(HasFeedForward(spec, l) ? spec.hidden_dim : 0));
    }
    w.AddMetadata(p + "feed_forward_length", GgufValue::Array(GgufType::kInt32, std::move(widths)));
  } else {
    w.AddMetadata(p + "feed_forward_length", GgufValue::Uint32(spec.hidden_dim));
  }
  w.AddMetadata(p + "block_count", GgufValue::Uint32(spec.n_layers));
  w.AddMetadata(p + "attention.head_count", GgufValue::Uint32(spec.n_heads));
  if (arch_spec.norm == NormKind::kLayer) {
    // BERT's checkpoints use 1e-12.
    w.AddMetadata(p + "attention.layer_norm_epsilon",
                  GgufValue::Float32(arch_spec.encoder ? 1e-12f : 1e-5f));
  }
  if (arch_spec.encoder) {
    w.AddMetadata(p + "attention.causal", GgufValue::Bool(false));
    const bool copied =
        std::any_of(spec.vocab_metadata.begin(), spec.vocab_metadata.end(),
                    [](const GgufKv& kv) { return kv.key == "tokenizer.ggml.token_type_count"; });
    if (!copied) {
      w.AddMetadata("tokenizer.ggml.token_type_count", GgufValue::Uint32(kTokenTypes));
    }
  }
  if (PerLayerKvHeads(spec)) {
    // LFM2's and the Mamba2 hybrids' converters: one entry per layer, 0 where it does not
    // attend.
    std::vector<GgufValue> kv_heads;
    for (int l = 0; l < spec.n_layers; ++l) {
      kv_heads.push_back(
          GgufValue::Int32(MixerOf(spec, l) == LayerMixer::kAttention ? spec.n_kv_heads : 0));
    }
    w.AddMetadata(p + "attention.head_count_kv",
                  GgufValue::Array(GgufType::kInt32, std::move(kv_heads)));
    if (RecurrentMixerOf(spec) == LayerMixer::kShortConv) {
      w.AddMetadata(p + "shortconv.l_cache", GgufValue::Uint32(spec.short_conv_kernel));
    }
  } else if (!gpt2) {
    w.AddMetadata(p + "attention.head_count_kv", GgufValue::Uint32(spec.n_kv_heads));
  }
  if (!arch_spec.learned_positions) {
    w.AddMetadata(p + "rope.dimension_count", GgufValue::Uint32(RopeDim(spec)));
    if (spec.head_dim > 0) {
      w.AddMetadata(p + "attention.key_length", GgufValue::Uint32(spec.head_dim));
      w.AddMetadata(p + "attention.value_length", GgufValue::Uint32(spec.head_dim));
    }
    // nomic-embed's base is 1000.
    w.AddMetadata(p + "rope.freq_base", GgufValue::Float32(arch_spec.encoder ? 1000.0f : 10000.0f));
  }
  if (arch_spec.norm == NormKind::kRms) {
    w.AddMetadata(p + "attention.layer_norm_rms_epsilon", GgufValue::Float32(1e-5f));
  }
  if (RecurrentMixerOf(spec) == LayerMixer::kMamba2) {
    const Mamba2Shape m = Mamba2Of(spec);
    w.AddMetadata(p + "ssm.conv_kernel", GgufValue::Uint32(m.conv_kernel));
    w.AddMetadata(p + "ssm.inner_size", GgufValue::Uint32(m.inner));
    w.AddMetadata(p + "ssm.state_size", GgufValue::Uint32(m.state));
    w.AddMetadata(p + "ssm.time_step_rank", GgufValue::Uint32(m.heads));
    w.AddMetadata(p + "ssm.group_count", GgufValue::Uint32(m.groups));
    // llama.cpp's nemotron_h reads it (the MTP head's norm).
    w.AddMetadata(p + "attention.layer_norm_epsilon", GgufValue::Float32(1e-5f));
  }
  // Granite 4.0-H's attention has no positions (its converter writes the switch false).
  if (arch_spec.rope_use == RopeUse::kFinetunedKey) {
    w.AddMetadata(p + "rope.scaling.finetuned", GgufValue::Bool(false));
  }
  if (!gpt2) w.AddMetadata(p + "vocab_size", GgufValue::Uint32(spec.vocab_size));
  if (spec.experts > 0) {
    w.AddMetadata(p + "expert_count", GgufValue::Uint32(spec.experts));
    w.AddMetadata(p + "expert_used_count", GgufValue::Uint32(spec.experts_used));
    if (spec.expert_hidden_dim > 0) {
      w.AddMetadata(p + "expert_feed_forward_length", GgufValue::Uint32(spec.expert_hidden_dim));
    }
    const ExpertTraits& traits = arch_spec.experts;
    // As the real files say: LFM2-8B-A1B routes by sigmoid after leading dense layers;
    // Nemotron 3 Nano renormalizes its sigmoid weights and scales them by 2.5.
    if (traits.gating_from_key) {
      w.AddMetadata(p + "expert_gating_func", GgufValue::Uint32(2));
    }
    if (traits.leading_dense_key) {
      w.AddMetadata(p + "leading_dense_block_count", GgufValue::Uint32(spec.leading_dense_layers));
    }
    if (traits.weights_keys) {
      w.AddMetadata(p + "expert_weights_norm", GgufValue::Bool(true));
      w.AddMetadata(p + "expert_weights_scale", GgufValue::Float32(2.5f));
    }
  }
  if (RecurrentMixerOf(spec) == LayerMixer::kGatedDeltaNet) {
    const DeltaNetShape d = DeltaNetOf(spec);
    w.AddMetadata(p + "ssm.conv_kernel", GgufValue::Uint32(d.conv_kernel));
    w.AddMetadata(p + "ssm.state_size", GgufValue::Uint32(d.head_k_dim));
    w.AddMetadata(p + "ssm.group_count", GgufValue::Uint32(d.k_heads));
    w.AddMetadata(p + "ssm.time_step_rank", GgufValue::Uint32(d.v_heads));
    w.AddMetadata(p + "ssm.inner_size", GgufValue::Uint32(d.value_dim()));
    w.AddMetadata(p + "full_attention_interval", GgufValue::Uint32(spec.full_attention_interval));
    // Qwen3.5's split of the rotated pairs (llama.cpp requires the key; Qwen3-Next has none).
    const int pairs = RopeDim(spec) / 2;
    if (SpecOf(spec.architecture).delta_net_layout == DeltaNetLayout::kQwen35) {
      w.AddMetadata(
          p + "rope.dimension_sections",
          GgufValue::Array(GgufType::kInt32,
                           {GgufValue::Int32((pairs + 2) / 3), GgufValue::Int32((pairs + 1) / 3),
                            GgufValue::Int32(pairs / 3), GgufValue::Int32(0)}));
    }
  }
  if (spec.sliding_window > 0) {
    w.AddMetadata(p + "attention.sliding_window", GgufValue::Uint32(spec.sliding_window));
    // Local layers with their own RoPE base (Gemma 3 models carry one).
    w.AddMetadata(p + "rope.freq_base_swa", GgufValue::Float32(1000.0f));
  }
  if (spec.vocab_metadata.empty()) {
    AddTokenizerMetadata(w, vocab);
  } else {
    for (const GgufKv& kv : spec.vocab_metadata) {
      if (kv.key == "tokenizer.chat_template" && !spec.chat_template.empty()) continue;
      w.AddMetadata(kv.key, kv.value);
    }
  }
  if (!spec.chat_template.empty()) {
    w.AddMetadata("tokenizer.chat_template", GgufValue::String(spec.chat_template));
  }
  // Encoders always say how they pool (mean unless asked otherwise).
  const int pooling = spec.pooling_type >= 0 ? spec.pooling_type : arch_spec.encoder ? 1 : -1;
  if (pooling >= 0) {
    w.AddMetadata(p + "pooling_type", GgufValue::Uint32(static_cast<uint32_t>(pooling)));
  }
  TensorMaker maker(w, spec);
  TEXTGEN_RETURN_IF_ERROR(AddTensors(maker, spec));
  return w;
}

}  // namespace textgen::model
