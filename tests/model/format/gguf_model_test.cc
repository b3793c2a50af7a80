// BuildModelFromGguf / LoadModel on files made by the writer: llama and gpt2 in every dtype,
// the gpt2 QKV split, and precise errors for missing or mis-shaped tensors.
#include "model/format/gguf_model.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/format/model_loader.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/model/format/loader_test_util.h"
#include "tests/tools/random_gguf.h"

namespace textgen::model {
namespace {

using ::testing::HasSubstr;
using namespace ::textgen::model::testing;

std::string TinyBytes(Architecture arch, DType dtype) {
  auto spec = RandomModelPreset("tiny", arch);
  EXPECT_TRUE(spec.ok());
  spec->dtype = dtype;
  auto writer = BuildRandomModel(*spec);
  EXPECT_TRUE(writer.ok()) << writer.status();
  return writer->Serialize();
}

absl::StatusOr<LoadedModel> Build(const std::string& bytes) {
  auto file = ParseGguf(Bytes(bytes));
  if (!file.ok()) return file.status();
  return BuildModelFromGguf(*file, "fallback");
}

class TinyModelTest : public ::testing::TestWithParam<DType> {};

TEST_P(TinyModelTest, LlamaLoadsThroughLoadModel) {
  const std::string path =
      TestTempPath(std::string("tiny_llama_") + DTypeName(GetParam()) + ".gguf");
  WriteFile(path, TinyBytes(Architecture::kLlama, GetParam()));
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 160);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.vocab_size, 300);
  EXPECT_EQ(c.context_length, 128);
  EXPECT_EQ(c.name, "tiny");
  EXPECT_TRUE(c.tied_output);
  EXPECT_EQ(model->weights.output.data, model->weights.token_embedding.data);
  EXPECT_EQ(model->file_dtype, GetParam());
  EXPECT_EQ(model->weights.layers[1].wk.dtype, GetParam());
  EXPECT_EQ(model->weights.layers[1].wk.rows, 32);
  EXPECT_EQ(model->weights.layers[1].attn_norm.dtype, DType::kF32);  // vectors stay f32
  const std::vector<float> norm = Floats(model->weights.output_norm);
  EXPECT_EQ(norm, std::vector<float>(64, 1.0f));
  const TokenizerData& t = model->tokenizer;
  EXPECT_EQ(t.tokens.size(), 300u);
  EXPECT_EQ(t.tokens[3], "<0x00>");
  EXPECT_EQ(t.token_types[258], TokenizerData::kByte);
  EXPECT_EQ(t.bos_id, 1);
  EXPECT_TRUE(t.add_bos);
}

TEST_P(TinyModelTest, Gpt2Loads) {
  auto model = Build(TinyBytes(Architecture::kGpt2, GetParam()));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.architecture, Architecture::kGpt2);
  EXPECT_EQ(model->config.n_kv_heads, 4);
  EXPECT_EQ(model->weights.position_embedding.rows, 128);
  EXPECT_EQ(model->tokenizer.kind, TokenizerData::Kind::kGpt2ByteBpe);
  EXPECT_EQ(model->tokenizer.tokens.back(), "<|endoftext|>");
  EXPECT_EQ(model->tokenizer.eos_id, 299);
  EXPECT_FALSE(model->tokenizer.merges.empty());
  EXPECT_FALSE(model->tokenizer.add_bos);
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, TinyModelTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0),
                         [](const auto& test_param) {
                           return std::string(DTypeName(test_param.param));
                         });

// Overwrites the fused QKV of block 0 with value = row * 1000 + col (bias: 0.5 * index), so
// the split can be checked against numbers that do not depend on the loader.
TEST(GgufModelTest, Gpt2QkvIsSplitIntoRowRanges) {
  std::string bytes = TinyBytes(Architecture::kGpt2, DType::kF32);
  auto file = ParseGguf(Bytes(bytes));
  ASSERT_TRUE(file.ok());
  const GgufTensorInfo* w = file->FindTensor("blk.0.attn_qkv.weight");
  const GgufTensorInfo* b = file->FindTensor("blk.0.attn_qkv.bias");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(w->dims[0], 64);
  ASSERT_EQ(w->dims[1], 192);
  for (int r = 0; r < 192; ++r) {
    for (int c = 0; c < 64; ++c) {
      Poke<float>(bytes, w->file_offset + (r * 64 + c) * 4, r * 1000.0f + c);
    }
  }
  for (int i = 0; i < 192; ++i) Poke<float>(bytes, b->file_offset + i * 4, 0.5f * i);
  auto model = Build(bytes);
  ASSERT_TRUE(model.ok()) << model.status();
  const LayerWeights& l = model->weights.layers[0];
  const TensorView* parts[] = {&l.wq, &l.wk, &l.wv};
  const TensorView* biases[] = {&l.bq, &l.bk, &l.bv};
  for (int p = 0; p < 3; ++p) {
    ASSERT_EQ(parts[p]->rows, 64);
    ASSERT_EQ(parts[p]->cols, 64);
    const std::vector<float> m = Floats(*parts[p]);
    EXPECT_EQ(m[0], (p * 64) * 1000.0f);
    EXPECT_EQ(m[5 * 64 + 7], (p * 64 + 5) * 1000.0f + 7);
    EXPECT_EQ(m[63 * 64 + 63], (p * 64 + 63) * 1000.0f + 63);
    const std::vector<float> bias = Floats(*biases[p]);
    ASSERT_EQ(bias.size(), 64u);
    EXPECT_EQ(bias[0], 0.5f * (p * 64));
    EXPECT_EQ(bias[63], 0.5f * (p * 64 + 63));
  }
  // Views, not copies: they point into the file's bytes.
  EXPECT_EQ(static_cast<const uint8_t*>(l.wk.data),
            reinterpret_cast<const uint8_t*>(bytes.data()) + w->file_offset + 64 * 64 * 4);
}

TEST(GgufModelTest, MissingTensorIsNamed) {
  std::string bytes = TinyBytes(Architecture::kLlama, DType::kF32);
  const size_t pos = PosAfterString(bytes, "blk.1.ffn_up.weight");
  ASSERT_NE(pos, std::string::npos);
  bytes[pos - 1] = 'x';  // rename to blk.1.ffn_up.weighx
  auto model = Build(bytes);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(model.status().message(),
            "missing tensor blk.1.ffn_up.weight (expected shape [64, 160])");
}

TEST(GgufModelTest, WrongShapeIsNamedWithExpectedAndActual) {
  std::string bytes = TinyBytes(Architecture::kLlama, DType::kF32);
  const size_t pos = PosAfterString(bytes, "blk.0.attn_k.weight");
  Poke<uint64_t>(bytes, pos + 4 + 8, 16);  // dims [64, 32] -> [64, 16]
  auto model = Build(bytes);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "tensor blk.0.attn_k.weight: expected shape [64, 32], got [64, 16] "
            "(GGUF order, innermost first)");
}

TEST(GgufModelTest, WrongMetadataTypeIsNamed) {
  auto spec = RandomModelPreset("tiny", Architecture::kLlama);
  auto writer = BuildRandomModel(*spec);
  writer->AddMetadata("general.name", GgufValue::Uint32(7));  // duplicate key is an error too
  auto model = Build(writer->Serialize());
  EXPECT_THAT(model.status().message(), HasSubstr("(general.name): duplicate key"));
}

TEST(GgufModelTest, UnknownArchitectureIsUnimplemented) {
  GgufWriter writer;
  writer.AddMetadata("general.architecture", GgufValue::String("mamba"));
  auto model = Build(writer.Serialize());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(model.status().message(),
            "general.architecture \"mamba\" is not supported (supported: llama, gpt2, qwen2, "
            "qwen3, phi3, gemma2, gemma3, bert, nomic-bert, qwen3moe, gpt-oss, qwen35, qwen35moe, "
            "lfm2, qwen3next, nemotron_h, granitehybrid, nemotron_h_moe, lfm2moe)");
}

// A tiny model of `arch` with extra metadata appended (later keys are read like any other).
absl::StatusOr<LoadedModel> BuildWith(Architecture arch,
                                      const std::vector<std::pair<std::string, GgufValue>>& kv,
                                      int head_dim = 0) {
  auto spec = RandomModelPreset("tiny", arch);
  spec->head_dim = head_dim;
  auto writer = BuildRandomModel(*spec);
  for (const auto& [key, value] : kv) writer->AddMetadata(key, value);
  return Build(writer->Serialize());
}

TEST(GgufModelTest, EveryArchitectureLoadsItsOwnLayout) {
  for (Architecture arch : {Architecture::kQwen2, Architecture::kQwen3, Architecture::kPhi3}) {
    auto model = BuildWith(arch, {}, /*head_dim=*/24);
    ASSERT_TRUE(model.ok()) << ArchitectureName(arch) << ": " << model.status();
    EXPECT_EQ(model->config.architecture, arch);
    EXPECT_EQ(model->config.head_dim, 24);  // attention.key_length, not 64 / 4
    EXPECT_EQ(model->config.rope_layout, RopeLayout::kNeox);
    const LayerWeights& l = model->weights.layers[1];
    EXPECT_EQ(l.wq.rows, 4 * 24);
    EXPECT_EQ(l.wk.rows, 2 * 24);
    EXPECT_EQ(l.bq.empty(), arch != Architecture::kQwen2);
    EXPECT_EQ(l.q_norm.empty(), arch != Architecture::kQwen3);
    EXPECT_EQ(l.w_gate.rows, 160);  // phi3: the first half of the fused ffn_up
  }
}

// Hybrids (qwen35): the layer list and the Gated DeltaNet shape from the ssm.* keys, each
// layer's tensors by its kind; a file whose keys or tensors do not add up is refused with the
// key or tensor named.
// A tiny hybrid of `layers` layers of which every `interval`-th attends, edited before loading.
absl::StatusOr<LoadedModel> BuildHybrid(Architecture arch, int layers, int interval,
                                        const std::function<void(GgufWriter&)>& edit) {
  auto spec = RandomModelPreset("tiny", arch);
  spec->n_layers = layers, spec->full_attention_interval = interval, spec->head_dim = 16;
  auto writer = BuildRandomModel(*spec);
  if (!writer.ok()) return writer.status();
  edit(*writer);
  return Build(writer->Serialize());
}

absl::StatusOr<LoadedModel> BuildQwen35(const std::function<void(GgufWriter&)>& edit) {
  return BuildHybrid(Architecture::kQwen35, 4, 2, edit);
}

TEST(GgufModelTest, HybridLayersComeFromTheLayerListAndTheSsmKeys) {
  auto model = BuildQwen35([](GgufWriter&) {});
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_THAT(c.layer_mixers,
              ::testing::ElementsAre(LayerMixer::kGatedDeltaNet, LayerMixer::kAttention,
                                     LayerMixer::kGatedDeltaNet, LayerMixer::kAttention));
  EXPECT_EQ(c.delta_net.conv_kernel, 4);
  EXPECT_EQ(c.delta_net.k_heads, 2);
  EXPECT_EQ(c.delta_net.v_heads, 4);
  EXPECT_EQ(c.delta_net.head_v_dim, 16);
  EXPECT_EQ(c.rope_dim, 4);
  EXPECT_EQ(c.attention_layers(), 2);
  EXPECT_EQ(c.recurrent_state_floats(), 2 * (3 * (2 * 32 + 64) + 4 * 16 * 16));
  EXPECT_EQ(model->weights.layers[1].wq.rows, 2 * 4 * 16);  // q and its gate
  EXPECT_TRUE(model->weights.layers[0].wq.empty());
  EXPECT_EQ(model->weights.layers[0].ssm_input.rows, 2 * 32 + 64);
  // attention.recurrent_layers overrides the interval; multi-token-prediction blocks at the
  // end are left out.
  model = BuildQwen35([](GgufWriter& w) {
    w.SetMetadata(
        "qwen35.attention.recurrent_layers",
        GgufValue::Array(GgufType::kBool, {GgufValue::Bool(true), GgufValue::Bool(false),
                                           GgufValue::Bool(true), GgufValue::Bool(false)}));
    w.SetMetadata("qwen35.nextn_predict_layers", GgufValue::Uint32(1));
  });
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.n_layers, 3);
}

TEST(GgufModelTest, HybridFilesThatDoNotAddUpAreRefusedByName) {
  const auto refused = [](const std::function<void(GgufWriter&)>& edit) {
    absl::StatusOr<LoadedModel> model = BuildQwen35(edit);
    return model.ok() ? std::string("loaded") : std::string(model.status().message());
  };
  EXPECT_EQ(refused([](GgufWriter& w) {
              w.SetMetadata("qwen35.attention.recurrent_layers",
                            GgufValue::Array(GgufType::kBool, {GgufValue::Bool(true)}));
            }),
            "qwen35.attention.recurrent_layers has 1 entries, expected one per block (4)");
  EXPECT_THAT(refused([](GgufWriter& w) { w.RemoveMetadata("qwen35.ssm.conv_kernel"); }),
              HasSubstr("qwen35.ssm.conv_kernel"));
  EXPECT_THAT(refused([](GgufWriter& w) {
                w.SetMetadata("qwen35.ssm.time_step_rank", GgufValue::Uint32(3));
              }),
              HasSubstr("must be a multiple of qwen35.ssm.group_count (key heads) 2"));
  EXPECT_EQ(refused([](GgufWriter& w) { w.RemoveTensor("blk.2.ssm_a"); }),
            "missing tensor blk.2.ssm_a (expected shape [4])");
  EXPECT_THAT(
      refused([](GgufWriter& w) { w.SetMetadata("qwen35.ssm.conv_kernel", GgufValue::Uint32(5)); }),
      HasSubstr("tensor blk.0.ssm_conv1d.weight: expected shape [5, 128], got [4, 128]"));
  EXPECT_THAT(refused([](GgufWriter& w) {
                w.SetMetadata(
                    "qwen35.rope.dimension_sections",
                    GgufValue::Array(GgufType::kInt32, {GgufValue::Int32(1), GgufValue::Int32(0),
                                                        GgufValue::Int32(0), GgufValue::Int32(1)}));
              }),
              HasSubstr("in the fourth section"));
}

// Qwen3-Next: grouped value heads and ssm_ba, as the converter writes them; a file
// converted before llama.cpp split ssm_in loads it whole (the engine reorders its rows).
TEST(GgufModelTest, Qwen3NextLoadsItsFusedLayouts) {
  auto spec = RandomModelPreset("tiny", Architecture::kQwen3Next);
  ASSERT_TRUE(spec.ok());
  spec->n_layers = 2, spec->full_attention_interval = 2, spec->head_dim = 16;
  auto writer = BuildRandomModel(*spec);
  ASSERT_TRUE(writer.ok()) << writer.status();
  auto model = Build(writer->Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  const DeltaNetShape& d = model->config.delta_net;
  EXPECT_TRUE(d.grouped_value_heads);
  EXPECT_EQ(d.key_head(1), 0);  // 4 value heads over 2 key heads: 0 0 1 1
  EXPECT_EQ(d.key_head(2), 1);
  const LayerWeights& l = model->weights.layers[0];
  EXPECT_EQ(l.ssm_beta_alpha.rows, 2 * 4);
  EXPECT_TRUE(l.ssm_beta.empty() && l.ssm_qkvz.empty());
  EXPECT_FALSE(model->weights.layers[1].shared_up.empty());
  // The legacy layout: ssm_in instead of attn_qkv and attn_gate.
  const int64_t rows = 2 * 2 * 16 + 2 * 4 * 16;
  writer->RemoveTensor("blk.0.attn_qkv.weight");
  writer->RemoveTensor("blk.0.attn_gate.weight");
  ASSERT_TRUE(writer
                  ->AddFloatTensor("blk.0.ssm_in.weight", DType::kF32, {64, rows},
                                   std::vector<float>(64 * rows, 0.01f))
                  .ok());
  model = Build(writer->Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->weights.layers[0].ssm_qkvz.rows, rows);
  EXPECT_TRUE(model->weights.layers[0].ssm_input.empty());
  writer->RemoveTensor("blk.0.ssm_in.weight");
  EXPECT_EQ(Build(writer->Serialize()).status().message(),
            "missing tensor blk.0.attn_qkv.weight (expected shape [64, 128])");
}

// LFM2: the layer list from a per-layer attention.head_count_kv (0: a short convolution), the
// taps from shortconv.l_cache, the final norm named token_embd_norm.
absl::StatusOr<LoadedModel> BuildLfm2(const std::function<void(GgufWriter&)>& edit) {
  return BuildHybrid(Architecture::kLfm2, 3, 3, edit);
}

TEST(GgufModelTest, Lfm2LayersComeFromThePerLayerKvHeads) {
  auto model = BuildLfm2([](GgufWriter&) {});
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_THAT(c.layer_mixers, ::testing::ElementsAre(LayerMixer::kShortConv, LayerMixer::kShortConv,
                                                     LayerMixer::kAttention));
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.short_conv_kernel, 3);
  EXPECT_EQ(c.rope_dim, 16);                          // the whole head
  EXPECT_EQ(c.recurrent_state_floats(), 2 * 2 * 64);  // two layers, the last 2 inputs b * x
  EXPECT_EQ(model->weights.layers[0].ssm_input.rows, 3 * 64);
  EXPECT_EQ(model->weights.layers[0].ssm_conv.cols, 3);
  EXPECT_FALSE(model->weights.output_norm.empty());
  EXPECT_TRUE(model->weights.layers[0].wq.empty());
  EXPECT_FALSE(model->weights.layers[2].q_norm.empty());
  // A scalar count: every layer attends (as llama.cpp reads it), so the attention tensors of
  // layer 0 are missing.
  EXPECT_EQ(BuildLfm2([](GgufWriter& w) {
              w.SetMetadata("lfm2.attention.head_count_kv", GgufValue::Uint32(2));
            })
                .status()
                .message(),
            "missing tensor blk.0.attn_q.weight (expected shape [64, 64])");
}

// Nemotron-H: each block is Mamba2 (no KV heads, no feed-forward width), attention (KV heads) or
// a squared-ReLU feed-forward normed by its attn_norm (a width); no positions.
absl::StatusOr<LoadedModel> BuildNemotronH(const std::function<void(GgufWriter&)>& edit) {
  return BuildHybrid(Architecture::kNemotronH, 6, 2, edit);
}

GgufValue IntArray(const std::vector<int>& values) {
  std::vector<GgufValue> v;
  for (int n : values) v.push_back(GgufValue::Int32(n));
  return GgufValue::Array(GgufType::kInt32, std::move(v));
}

TEST(GgufModelTest, NemotronHBlocksComeFromThePerLayerKvHeadsAndWidths) {
  auto model = BuildNemotronH([](GgufWriter&) {});
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_THAT(c.layer_mixers,
              ::testing::ElementsAre(LayerMixer::kMamba2, LayerMixer::kNone, LayerMixer::kAttention,
                                     LayerMixer::kNone, LayerMixer::kMamba2, LayerMixer::kNone));
  EXPECT_THAT(c.feed_forward_layers, ::testing::ElementsAre(false, true, false, true, false, true));
  EXPECT_EQ(c.hidden_dim, 160);
  EXPECT_FALSE(c.rope);
  EXPECT_EQ(c.rope_dim, 0);
  const Mamba2Shape& m = c.mamba2;
  EXPECT_EQ(m.inner, 128);
  EXPECT_EQ(m.heads, 8);
  EXPECT_EQ(m.state, 16);
  EXPECT_EQ(m.groups, 2);
  EXPECT_EQ(m.group_of(3), 0);  // 8 heads over 2 groups: 0 0 0 0 1 1 1 1
  EXPECT_EQ(m.group_of(4), 1);
  EXPECT_EQ(c.attention_layers(), 1);
  // Two Mamba2 layers: the last 3 inputs of x | B | C, and 8 heads of [16, 16].
  EXPECT_EQ(c.recurrent_state_floats(), 2 * (3 * (128 + 2 * 2 * 16) + 128 * 16));
  const LayerWeights& mamba = model->weights.layers[0];
  EXPECT_EQ(mamba.ssm_input.rows, 128 + (128 + 64) + 8);  // z | x B C | dt
  EXPECT_EQ(mamba.ssm_d.rows, 8);
  EXPECT_EQ(mamba.ssm_norm.rows, 2);
  EXPECT_TRUE(mamba.w_up.empty() && mamba.ffn_norm.empty());
  const LayerWeights& mlp = model->weights.layers[1];
  EXPECT_FALSE(mlp.ffn_norm.empty());  // its attn_norm
  EXPECT_TRUE(mlp.attn_norm.empty() && mlp.w_gate.empty());
  EXPECT_EQ(mlp.w_up.rows, 160);
  // The norms' epsilon falls back to attention.layer_norm_epsilon, as llama.cpp reads it.
  model = BuildNemotronH([](GgufWriter& w) {
    w.RemoveMetadata("nemotron_h.attention.layer_norm_rms_epsilon");
    w.SetMetadata("nemotron_h.attention.layer_norm_epsilon", GgufValue::Float32(1e-3f));
  });
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FLOAT_EQ(model->config.norm_eps, 1e-3f);
}

TEST(GgufModelTest, Mamba2FilesThatDoNotAddUpAreRefusedByName) {
  const auto refused = [](const std::function<void(GgufWriter&)>& edit) {
    absl::StatusOr<LoadedModel> model = BuildNemotronH(edit);
    return model.ok() ? std::string("loaded") : std::string(model.status().message());
  };
  EXPECT_THAT(refused([](GgufWriter& w) {
                w.SetMetadata("nemotron_h.feed_forward_length", GgufValue::Uint32(160));
              }),
              HasSubstr("needs nemotron_h.feed_forward_length as one entry per block"));
  EXPECT_THAT(refused([](GgufWriter& w) {
                w.SetMetadata("nemotron_h.feed_forward_length", IntArray({0, 160, 0, 96, 0, 160}));
              }),
              HasSubstr("differs between feed-forward blocks (160 and 96)"));
  EXPECT_THAT(refused([](GgufWriter& w) {
                w.SetMetadata("nemotron_h.feed_forward_length", IntArray({0, 160}));
              }),
              HasSubstr("has 2 entries, expected one per block (6)"));
  EXPECT_THAT(refused([](GgufWriter& w) {
                w.SetMetadata("nemotron_h.ssm.group_count", GgufValue::Uint32(3));
              }),
              HasSubstr("be a multiple of nemotron_h.ssm.group_count 3"));
  EXPECT_THAT(refused([](GgufWriter& w) { w.RemoveMetadata("nemotron_h.ssm.state_size"); }),
              HasSubstr("nemotron_h.ssm.state_size"));
  EXPECT_THAT(refused([](GgufWriter& w) { w.RemoveTensor("blk.4.ssm_d"); }),
              HasSubstr("missing tensor blk.4.ssm_d"));
  EXPECT_THAT(refused([](GgufWriter& w) {
                w.SetMetadata("nemotron_h.ssm.inner_size", GgufValue::Uint32(96));
              }),
              HasSubstr("tensor blk.0.ssm_in.weight: expected shape"));
  // A layer list that makes block 0 attend: the file holds no attention tensors there.
  EXPECT_THAT(refused([](GgufWriter& w) {
                w.SetMetadata("nemotron_h.attention.head_count_kv", IntArray({2, 0, 2, 0, 0, 0}));
              }),
              HasSubstr("missing tensor blk.0.attn_q.weight"));
}

// The hybrids' mixtures: Nemotron-H's sigmoid router (its norm and scale read from the file),
// squared-ReLU experts without a gate and a shared expert without a gate logit; LFM2's router
// from expert_gating_func after leading dense layers; each with its selection bias.
TEST(GgufModelTest, HybridMixturesReadTheirRoutersAndLayers) {
  auto model = BuildHybrid(Architecture::kNemotronHMoe, 4, 2, [](GgufWriter&) {});
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_EQ(c.expert_gating, ExpertGating::kSigmoid);
  EXPECT_TRUE(c.expert_weights_norm);
  EXPECT_FLOAT_EQ(c.expert_weights_scale, 2.5f);
  EXPECT_EQ(c.shared_expert_hidden_dim, 160);
  const LayerWeights& moe = model->weights.layers[1];
  EXPECT_EQ(moe.expert_selection_bias.cols, 8);
  EXPECT_TRUE(moe.gate_experts.empty() && moe.shared_gate.empty() &&
              moe.shared_expert_gate.empty());
  EXPECT_FALSE(moe.up_experts.empty() || moe.shared_up.empty());
  const auto refused = [](Architecture arch, const std::function<void(GgufWriter&)>& edit) {
    absl::StatusOr<LoadedModel> m = BuildHybrid(arch, 4, 2, edit);
    return m.ok() ? std::string("loaded") : std::string(m.status().message());
  };
  EXPECT_THAT(refused(Architecture::kNemotronHMoe,
                      [](GgufWriter& w) { w.RemoveTensor("blk.3.exp_probs_b.bias"); }),
              HasSubstr("missing tensor blk.3.exp_probs_b.bias"));
  EXPECT_THAT(refused(Architecture::kNemotronHMoe,
                      [](GgufWriter& w) {
                        w.AddMetadata("nemotron_h_moe.expert_group_count", GgufValue::Uint32(4));
                      }),
              HasSubstr("choosing experts within the best groups"));
  EXPECT_THAT(refused(Architecture::kNemotronHMoe,
                      [](GgufWriter& w) {
                        w.SetMetadata("nemotron_h_moe.expert_weights_scale",
                                      GgufValue::Float32(-1.0f));
                      }),
              HasSubstr("nemotron_h_moe.expert_weights_scale -1 is not in [0, 1e6)"));

  auto spec = RandomModelPreset("tiny", Architecture::kLfm2Moe);
  ASSERT_TRUE(spec.ok());
  spec->n_layers = 3, spec->full_attention_interval = 3, spec->head_dim = 16;
  spec->leading_dense_layers = 1;
  auto writer = BuildRandomModel(*spec);
  ASSERT_TRUE(writer.ok()) << writer.status();
  model = Build(writer->Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.expert_gating, ExpertGating::kSigmoid);  // expert_gating_func 2
  EXPECT_EQ(model->config.leading_dense_layers, 1);
  EXPECT_FALSE(model->config.layer_has_experts(0));
  EXPECT_TRUE(model->config.layer_has_experts(1));
  EXPECT_FALSE(model->weights.layers[0].w_gate.empty());
  EXPECT_TRUE(model->weights.layers[0].router.empty());
  EXPECT_FALSE(model->weights.layers[1].gate_experts.empty());
  writer->SetMetadata("lfm2moe.expert_gating_func", GgufValue::Uint32(4));
  EXPECT_THAT(Build(writer->Serialize()).status().message(),
              HasSubstr("lfm2moe.expert_gating_func"));
  writer->SetMetadata("lfm2moe.expert_gating_func", GgufValue::Uint32(2));
  writer->SetMetadata("lfm2moe.leading_dense_block_count", GgufValue::Uint32(4));
  EXPECT_THAT(Build(writer->Serialize()).status().message(),
              HasSubstr("lfm2moe.leading_dense_block_count"));
}

// Granite 4.0-H: rope.scaling.finetuned false turns RoPE off; Granite's multipliers are read.
TEST(GgufModelTest, GraniteHybridReadsItsMultipliersAndRopeSwitch) {
  const auto build = [](const std::function<void(GgufWriter&)>& edit) {
    return BuildHybrid(Architecture::kGraniteHybrid, 4, 2, edit);
  };
  auto model = build([](GgufWriter& w) {
    w.AddMetadata("granitehybrid.embedding_scale", GgufValue::Float32(12.0f));
    w.AddMetadata("granitehybrid.residual_scale", GgufValue::Float32(0.22f));
    w.AddMetadata("granitehybrid.logit_scale", GgufValue::Float32(8.0f));
    w.AddMetadata("granitehybrid.attention.scale", GgufValue::Float32(0.0078125f));
  });
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_THAT(c.layer_mixers, ::testing::ElementsAre(LayerMixer::kMamba2, LayerMixer::kAttention,
                                                     LayerMixer::kMamba2, LayerMixer::kAttention));
  EXPECT_TRUE(c.feed_forward_layers.empty());  // every block has one
  EXPECT_FALSE(c.rope);  // rope.scaling.finetuned false, as Granite 4.0-H's converter writes
  EXPECT_FLOAT_EQ(c.embedding_scale, 12.0f);
  EXPECT_FLOAT_EQ(c.residual_scale, 0.22f);
  EXPECT_FLOAT_EQ(c.logit_scale, 8.0f);
  EXPECT_FLOAT_EQ(c.attention_scale, 0.0078125f);
  // true (Bamba), or without the key, RoPE as llama.cpp's default.
  for (const bool remove : {false, true}) {
    model = build([remove](GgufWriter& w) {
      if (remove) {
        w.RemoveMetadata("granitehybrid.rope.scaling.finetuned");
      } else {
        w.SetMetadata("granitehybrid.rope.scaling.finetuned", GgufValue::Bool(true));
      }
    });
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_TRUE(model->config.rope);
    EXPECT_EQ(model->config.rope_dim, 16);
  }
  EXPECT_THAT(build([](GgufWriter& w) {
                w.AddMetadata("granitehybrid.residual_scale", GgufValue::Float32(-1.0f));
              })
                  .status()
                  .message(),
              HasSubstr("granitehybrid.residual_scale -1 is not positive"));
}

TEST(GgufModelTest, Lfm2FilesThatDoNotAddUpAreRefusedByName) {
  const auto refused = [](const std::function<void(GgufWriter&)>& edit) {
    absl::StatusOr<LoadedModel> model = BuildLfm2(edit);
    return model.ok() ? std::string("loaded") : std::string(model.status().message());
  };
  const auto kv_heads = [](std::vector<int> per_layer) {
    std::vector<GgufValue> v;
    for (int n : per_layer) v.push_back(GgufValue::Int32(n));
    return GgufValue::Array(GgufType::kInt32, std::move(v));
  };
  EXPECT_THAT(refused([&](GgufWriter& w) {
                w.SetMetadata("lfm2.attention.head_count_kv", kv_heads({0, 0}));
              }),
              HasSubstr("lfm2.attention.head_count_kv has 2 entries, expected one per block (3)"));
  EXPECT_THAT(refused([&](GgufWriter& w) {
                w.SetMetadata("lfm2.attention.head_count_kv", kv_heads({1, 0, 2}));
              }),
              HasSubstr("differs between attention layers (1 and 2)"));
  EXPECT_THAT(refused([&](GgufWriter& w) {
                w.SetMetadata("lfm2.attention.head_count_kv", kv_heads({0, 0, 5}));
              }),
              HasSubstr("out of range [0, 4]"));
  EXPECT_THAT(refused([](GgufWriter& w) { w.RemoveMetadata("lfm2.shortconv.l_cache"); }),
              HasSubstr("lfm2.shortconv.l_cache"));
  EXPECT_THAT(
      refused([](GgufWriter& w) { w.SetMetadata("lfm2.shortconv.l_cache", GgufValue::Uint32(4)); }),
      HasSubstr("tensor blk.0.shortconv.conv.weight: expected shape [4, 64], got [3, 64]"));
  EXPECT_EQ(refused([](GgufWriter& w) { w.RemoveTensor("blk.1.shortconv.out_proj.weight"); }),
            "missing tensor blk.1.shortconv.out_proj.weight (expected shape [64, 64])");
  EXPECT_THAT(refused([](GgufWriter& w) {
                w.AddMetadata("lfm2.attention.sliding_window", GgufValue::Uint32(512));
              }),
              HasSubstr("sliding-window attention is not supported"));
}

// Mixtures of experts: the router and the experts' stacked 3-D tensors (GGUF [cols, rows,
// experts]), each expert's matrix a view of its rows; the width from expert_feed_forward_length,
// or as llama.cpp derives it without the key.
TEST(GgufModelTest, MixturesOfExpertsLoadTheirRouterAndStackedExperts) {
  auto spec = RandomModelPreset("tiny", Architecture::kQwen3Moe);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->experts, 8);
  auto model = Build(BuildRandomModel(*spec)->Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_EQ(c.experts, 8);
  EXPECT_EQ(c.experts_used, 2);
  EXPECT_EQ(c.expert_hidden_dim, 80);
  const LayerWeights& l = model->weights.layers[1];
  EXPECT_TRUE(l.w_gate.empty() && l.w_up.empty() && l.w_down.empty());
  EXPECT_EQ(l.router.dtype, DType::kF32);
  EXPECT_EQ(l.router.rows, 8);
  EXPECT_EQ(l.router.cols, 64);
  EXPECT_EQ(l.gate_experts.rows, 8 * 80);
  EXPECT_EQ(l.up_experts.cols, 64);
  EXPECT_EQ(l.down_experts.rows, 8 * 64);
  EXPECT_EQ(l.down_experts.cols, 80);
  const TensorView last = ExpertOf(l.down_experts, 8, 7);
  EXPECT_EQ(last.rows, 64);
  EXPECT_EQ(static_cast<const uint8_t*>(last.data),
            static_cast<const uint8_t*>(l.down_experts.data) + 7 * 64 * 80 * sizeof(float));

  // Without expert_feed_forward_length: feed_forward_length / experts used (qwen3moe), or
  // feed_forward_length itself (Mixtral-style llama).
  spec->expert_hidden_dim = 0;
  model = Build(BuildRandomModel(*spec)->Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.expert_hidden_dim, 160 / 2);
  auto mixtral = RandomModelPreset("tiny", Architecture::kLlama);
  mixtral->experts = 4, mixtral->experts_used = 2;
  model = Build(BuildRandomModel(*mixtral)->Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.expert_hidden_dim, 160);
  EXPECT_EQ(model->weights.layers[0].gate_experts.rows, 4 * 160);
}

TEST(GgufModelTest, BadExpertMetadataIsRefusedByName) {
  // An architecture without experts.
  auto model = BuildWith(Architecture::kQwen2, {{"qwen2.expert_count", GgufValue::Uint32(4)}});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(model.status().message(),
            "qwen2.expert_count is 4: a mixture of experts is not supported in qwen2 models (it "
            "is in llama, qwen3moe, gpt-oss, qwen35moe, qwen3next, granitehybrid, nemotron_h_moe, "
            "lfm2moe)");
  // Experts claimed without a count per token, with too many per token, or per layer.
  model = BuildWith(Architecture::kLlama, {{"llama.expert_count", GgufValue::Uint32(4)}});
  EXPECT_EQ(model.status().message(),
            "a mixture-of-experts model needs llama.expert_used_count (experts per token)");
  model = BuildWith(Architecture::kLlama, {{"llama.expert_count", GgufValue::Uint32(4)},
                                           {"llama.expert_used_count", GgufValue::Uint32(5)}});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("llama.expert_used_count"));
  EXPECT_THAT(model.status().message(), HasSubstr("5"));
  model =
      BuildWith(Architecture::kLlama, {{"llama.expert_count", GgufValue::Uint32(4)},
                                       {"llama.expert_used_count", GgufValue::Int32Array({2, 2})}});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(model.status().message(), HasSubstr("expert_used_count is an array"));
  // A dense file that claims experts: the router is missing.
  model = BuildWith(Architecture::kLlama, {{"llama.expert_count", GgufValue::Uint32(4)},
                                           {"llama.expert_used_count", GgufValue::Uint32(2)}});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(model.status().message(),
            "missing tensor blk.0.ffn_gate_inp.weight (expected shape [64, 4])");

  // qwen3moe without an expert count.
  auto spec = RandomModelPreset("tiny", Architecture::kQwen3Moe);
  std::string bytes = BuildRandomModel(*spec)->Serialize();
  size_t pos = PosAfterString(bytes, "qwen3moe.expert_count");
  ASSERT_NE(pos, std::string::npos);
  bytes[pos - 1] = 'x';
  EXPECT_EQ(Build(bytes).status().message(), "a qwen3moe model needs qwen3moe.expert_count > 0");
  // Experts narrower than the file's stacked tensors: the 3-D shape is named.
  bytes = BuildRandomModel(*spec)->Serialize();
  pos = PosAfterString(bytes, "qwen3moe.expert_feed_forward_length");
  ASSERT_NE(pos, std::string::npos);
  Poke<uint32_t>(bytes, pos + 4, 40);  // after the value type: 80 -> 40
  model = Build(bytes);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "tensor blk.0.ffn_gate_exps.weight: expected shape [64, 40, 8], got [64, 80, 8] "
            "(GGUF order, innermost first)");
}

// Encoders: bidirectional unless the file says otherwise, token types and the embedding norm
// read, no LM head, a WordPiece vocabulary framed [CLS] ... [SEP]; their keys are checked.
TEST(GgufModelTest, EncodersLoadWithoutAnLmHead) {
  for (Architecture arch : {Architecture::kBert, Architecture::kNomicBert}) {
    auto model = BuildWith(arch, {});
    ASSERT_TRUE(model.ok()) << ArchitectureName(arch) << ": " << model.status();
    const ModelConfig& c = model->config;
    EXPECT_FALSE(c.causal);
    EXPECT_EQ(c.token_type_count, 2);
    EXPECT_EQ(c.pooling, Pooling::kMean);
    EXPECT_FLOAT_EQ(c.norm_eps, 1e-12f);
    EXPECT_TRUE(model->weights.output.empty());
    EXPECT_TRUE(model->weights.output_norm.empty());
    EXPECT_EQ(model->weights.token_types.rows, 2);
    EXPECT_FALSE(model->weights.embedding_norm_bias.empty());
    EXPECT_EQ(model->weights.position_embedding.empty(), arch == Architecture::kNomicBert);
    EXPECT_EQ(model->weights.layers[0].bq.empty(), arch == Architecture::kNomicBert);
    EXPECT_EQ(model->tokenizer.kind, TokenizerData::Kind::kWordPiece);
    EXPECT_EQ(model->tokenizer.sep_id, 3);
    EXPECT_TRUE(model->tokenizer.add_sep);
  }
}

TEST(GgufModelTest, EncoderAndCausalKeysAreChecked) {
  // The key renamed in place (same length), so the file lacks it.
  std::string bytes =
      BuildRandomModel(*RandomModelPreset("tiny", Architecture::kBert))->Serialize();
  const std::string key = "tokenizer.ggml.token_type_count";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, key.size(), "tokenizer.ggml.token_type_xxxxx");
  auto model = Build(bytes);
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()),
              ::testing::HasSubstr("tokenizer.ggml.token_type_count"));

  auto decoder =
      BuildWith(Architecture::kLlama, {{"llama.attention.causal", GgufValue::Bool(false)}});
  ASSERT_FALSE(decoder.ok());
  EXPECT_EQ(decoder.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(decoder.status().message()), ::testing::HasSubstr("bidirectional"));
}

// Gemma's keys, and llama.cpp's defaults where a file leaves them out.
TEST(GgufModelTest, GemmaReadsSlidingWindowSoftcapsAndLocalRope) {
  auto model = BuildWith(Architecture::kGemma2, {}, /*head_dim=*/24);
  ASSERT_TRUE(model.ok()) << model.status();
  ModelConfig c = model->config;
  EXPECT_FLOAT_EQ(c.embedding_scale, 8.0f);  // sqrt(64)
  EXPECT_EQ(c.attention_scale, 0.0f);        // 1 / sqrt(head_dim)
  EXPECT_EQ(c.attention_softcap, 50.0f);
  EXPECT_EQ(c.final_logit_softcap, 30.0f);
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.sliding_window_layers, (std::vector<bool>{true, false}));  // period 2
  EXPECT_EQ(c.rope_theta_local, c.rope_theta);                           // inherited
  EXPECT_FALSE(model->weights.layers[0].attn_post_norm.empty());
  EXPECT_FALSE(model->weights.layers[0].ffn_post_norm.empty());
  EXPECT_TRUE(model->weights.layers[0].q_norm.empty());

  model = BuildWith(
      Architecture::kGemma2,
      {{"gemma2.attn_logit_softcapping", GgufValue::Float32(20.0f)},
       {"gemma2.final_logit_softcapping", GgufValue::Float32(15.0f)},
       {"gemma2.attention.sliding_window", GgufValue::Uint32(9)},
       {"gemma2.attention.sliding_window_pattern",
        GgufValue::Array(GgufType::kBool, {GgufValue::Bool(false), GgufValue::Bool(true)})}});
  ASSERT_TRUE(model.ok()) << model.status();
  c = model->config;
  EXPECT_EQ(c.attention_softcap, 20.0f);
  EXPECT_EQ(c.final_logit_softcap, 15.0f);
  EXPECT_EQ(c.sliding_window, 9);
  EXPECT_EQ(c.sliding_window_layers, (std::vector<bool>{false, true}));

  // Gemma 3: no sliding window without the key, no caps, Q/K norms.
  model = BuildWith(Architecture::kGemma3, {});
  ASSERT_TRUE(model.ok()) << model.status();
  c = model->config;
  EXPECT_TRUE(c.sliding_window_layers.empty());
  EXPECT_EQ(c.attention_softcap, 0.0f);
  EXPECT_EQ(c.final_logit_softcap, 0.0f);
  EXPECT_FALSE(model->weights.layers[1].q_norm.empty());
  model = BuildWith(Architecture::kGemma3,
                    {{"gemma3.attention.sliding_window", GgufValue::Uint32(512)},
                     {"gemma3.attention.sliding_window_pattern", GgufValue::Uint32(2)}});
  ASSERT_TRUE(model.ok()) << model.status();
  c = model->config;
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_EQ(c.sliding_window_layers, (std::vector<bool>{true, false}));
  EXPECT_EQ(c.rope_theta_local, 10000.0f);  // Gemma 3's local default, not the global base

  model = BuildWith(Architecture::kGemma2,
                    {{"gemma2.attention.sliding_window_pattern",
                      GgufValue::Array(GgufType::kBool, {GgufValue::Bool(true)})}});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "gemma2.attention.sliding_window_pattern has 1 entries, expected one per layer (2)");
  model = BuildWith(Architecture::kGemma2,
                    {{"gemma2.final_logit_softcapping", GgufValue::Float32(-3.0f)}});
  EXPECT_EQ(model.status().message(), "gemma2.final_logit_softcapping -3 is not positive");
}

TEST(GgufModelTest, UnsupportedOrBadRopeScalingIsNamed) {
  auto model =
      BuildWith(Architecture::kLlama, {{"llama.rope.scaling.type", GgufValue::String("longrope")}});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(
      model.status().message(),
      "llama.rope.scaling.type \"longrope\" is not supported (supported: none, linear, yarn)");
  // YaRN needs its factor; DeepSeek's log multiplier is refused.
  model = BuildWith(Architecture::kLlama, {{"llama.rope.scaling.type", GgufValue::String("yarn")}});
  EXPECT_THAT(model.status().message(), HasSubstr("llama.rope.scaling.factor"));
  model = BuildWith(Architecture::kQwen3,
                    {{"qwen3.rope.scaling.type", GgufValue::String("yarn")},
                     {"qwen3.rope.scaling.factor", GgufValue::Float32(4)},
                     {"qwen3.rope.scaling.yarn_log_multiplier", GgufValue::Float32(0.1f)}});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(model.status().message(), HasSubstr("yarn_log_multiplier"));
  // Sliding-window layers take YaRN too (llama.cpp scales every layer's RoPE alike).
  model = BuildWith(Architecture::kGemma2, {{"gemma2.rope.scaling.type", GgufValue::String("yarn")},
                                            {"gemma2.rope.scaling.factor", GgufValue::Float32(4)}});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.rope_yarn_original_context, 128);
  EXPECT_FALSE(model->config.sliding_window_layers.empty());
  // The original context defaults to the model's, as in llama.cpp.
  model = BuildWith(Architecture::kQwen3, {{"qwen3.rope.scaling.type", GgufValue::String("yarn")},
                                           {"qwen3.rope.scaling.factor", GgufValue::Float32(4)}});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.rope_freq_scale, 0.25f);
  EXPECT_EQ(model->config.rope_yarn_original_context, 128);
  model = BuildWith(Architecture::kQwen3,
                    {{"qwen3.rope.scaling.type", GgufValue::String("yarn")},
                     {"qwen3.rope.scaling.factor", GgufValue::Float32(4)},
                     {"qwen3.rope.scaling.original_context_length", GgufValue::Uint32(32)}});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.rope_yarn_original_context, 32);
  model =
      BuildWith(Architecture::kLlama, {{"llama.rope.scaling.type", GgufValue::String("linear")},
                                       {"llama.rope.scaling.factor", GgufValue::Float32(0.5f)}});
  EXPECT_EQ(model.status().message(), "llama.rope.scaling.factor 0.5 is not in [1, 1024]");
  model = BuildWith(Architecture::kLlama, {{"llama.rope.scaling.type", GgufValue::String("linear")},
                                           {"llama.rope.scaling.factor", GgufValue::Float32(4)}});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.rope_freq_scale, 0.25f);
}

TEST(GgufModelTest, BadRopeAttentionFactorAndLoneLongRopeFactorsAreNamed) {
  auto model = BuildWith(Architecture::kPhi3,
                         {{"phi3.rope.scaling.attn_factor", GgufValue::Float32(-1.0f)}});
  EXPECT_EQ(model.status().message(), "phi3.rope.scaling.attn_factor -1 is not in (0, 16]");

  auto spec = RandomModelPreset("tiny", Architecture::kPhi3);
  auto writer = BuildRandomModel(*spec);
  ASSERT_TRUE(writer
                  ->AddFloatTensor("rope_factors_long.weight", DType::kF32, {8},
                                   std::vector<float>(8, 2.0f))
                  .ok());
  model = Build(writer->Serialize());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "rope_factors_long.weight and rope_factors_short.weight must come together");
}

TEST(GgufModelTest, UnknownPreTokenizerIsNamed) {
  auto spec = RandomModelPreset("tiny", Architecture::kGpt2);
  std::string bytes = BuildRandomModel(*spec)->Serialize();
  const size_t pos = PosAfterString(bytes, "gpt-2");  // the tokenizer.ggml.pre value
  ASSERT_NE(pos, std::string::npos);
  bytes[pos - 1] = '3';  // "gpt-3": same length, unknown
  auto model = Build(bytes);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(),
              HasSubstr("tokenizer.ggml.pre \"gpt-3\" is not a pre-tokenizer textgen knows"));
}

TEST(GgufModelTest, DifferentKeyAndValueSizesAreUnimplemented) {
  auto model =
      BuildWith(Architecture::kQwen3, {{"qwen3.attention.key_length", GgufValue::Uint32(16)},
                                       {"qwen3.attention.value_length", GgufValue::Uint32(32)}});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(model.status().message(),
              HasSubstr("qwen3.attention.value_length 32 differs from the key length 16"));
}

TEST(GgufModelTest, MissingArchitectureTensorsAreNamed) {
  auto spec = RandomModelPreset("tiny", Architecture::kQwen3);
  std::string bytes = BuildRandomModel(*spec)->Serialize();
  const size_t pos = PosAfterString(bytes, "blk.1.attn_k_norm.weight");
  ASSERT_NE(pos, std::string::npos);
  bytes[pos - 1] = 'x';
  EXPECT_EQ(Build(bytes).status().message(),
            "missing tensor blk.1.attn_k_norm.weight (expected shape [16])");
  spec = RandomModelPreset("tiny", Architecture::kQwen2);
  bytes = BuildRandomModel(*spec)->Serialize();
  const size_t bias = PosAfterString(bytes, "blk.0.attn_v.bias");
  ASSERT_NE(bias, std::string::npos);
  bytes[bias - 1] = 'x';
  EXPECT_EQ(Build(bytes).status().message(),
            "missing tensor blk.0.attn_v.bias (expected shape [32])");
}

TEST(GgufModelTest, MissingHyperparameterIsNamed) {
  GgufWriter writer;
  writer.AddMetadata("general.architecture", GgufValue::String("llama"));
  writer.AddMetadata("llama.embedding_length", GgufValue::String("64"));
  auto model = Build(writer.Serialize());
  EXPECT_EQ(model.status().message(),
            "metadata key #2 (llama.embedding_length): expected an integer, got string");
}

// The stories15M shape (Q8_0 to keep the temp file small) loads with the right config.
TEST(GgufModelTest, Stories15MShapedFileLoads) {
  auto spec = RandomModelPreset("stories15M", Architecture::kLlama);
  ASSERT_TRUE(spec.ok());
  spec->dtype = DType::kQ8_0;
  auto writer = BuildRandomModel(*spec);
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string path = TestTempPath("stories15M_q8_0.gguf");
  ASSERT_TRUE(writer->WriteFile(path).ok());
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.dim, 288);
  EXPECT_EQ(model->config.hidden_dim, 768);
  EXPECT_EQ(model->config.n_layers, 6);
  EXPECT_EQ(model->config.n_heads, 6);
  EXPECT_EQ(model->config.head_dim, 48);
  EXPECT_EQ(model->config.vocab_size, 32000);
  EXPECT_EQ(model->config.context_length, 256);
  EXPECT_EQ(model->file_dtype, DType::kQ8_0);
  EXPECT_EQ(model->tokenizer.tokens.size(), 32000u);
  // Weights ~ N(0, 0.02): the sample std of the embedding is close to it.
  const std::vector<float> e = Floats(model->weights.token_embedding);
  double sum = 0, sum_sq = 0;
  for (float x : e) sum += x, sum_sq += double{x} * x;
  const double mean = sum / e.size();
  EXPECT_NEAR(std::sqrt(sum_sq / e.size() - mean * mean), 0.02, 0.001);
  std::filesystem::remove(path);
}

// gpt-oss's harmony vocabulary: <|return|> and <|call|> end a generation, <|end|> (which ends a
// message inside a reply) does not, and the structure tokens are printed so that the reply's
// channels can be parsed, yet stay control tokens that user text cannot produce (llama.cpp makes
// them user-defined); <|endoftext|> stays EOS.
TEST(GgufModelTest, HarmonyVocabularyEndsOnReturnAndCallAndPrintsItsStructure) {
  auto spec = RandomModelPreset("tiny", Architecture::kGptOss);
  ASSERT_TRUE(spec.ok());
  const std::vector<std::string> harmony = {"<|start|>",  "<|channel|>", "<|message|>",  "<|end|>",
                                            "<|return|>", "<|call|>",    "<|constrain|>"};
  auto vocab = SyntheticGpt2Vocab(spec->vocab_size - static_cast<int>(harmony.size()));
  ASSERT_TRUE(vocab.ok());
  for (const std::string& text : harmony) {
    vocab->tokens.push_back(text);
    vocab->token_types.push_back(TokenizerData::kControl);  // as the real file types them
  }
  const int first = spec->vocab_size - static_cast<int>(harmony.size());
  spec->vocab_metadata = {
      {"tokenizer.ggml.model", GgufValue::String("gpt2")},
      {"tokenizer.ggml.pre", GgufValue::String("gpt-4o")},
      {"tokenizer.ggml.tokens", GgufValue::StringArray(vocab->tokens)},
      {"tokenizer.ggml.token_type", GgufValue::Int32Array(vocab->token_types)},
      {"tokenizer.ggml.merges", GgufValue::StringArray(vocab->merges)},
      {"tokenizer.ggml.eos_token_id", GgufValue::Uint32(static_cast<uint32_t>(vocab->eos_id))},
      // The real file's end-of-turn key names <|end|>: the harmony rule overrides it too.
      {"tokenizer.ggml.eot_token_id", GgufValue::Uint32(static_cast<uint32_t>(first + 3))}};
  auto model = Build(BuildRandomModel(*spec)->Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  const TokenizerData& t = model->tokenizer;
  std::vector<int> eog = t.end_of_generation_ids;
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  EXPECT_EQ(eog, (std::vector<int>{vocab->eos_id, first + 4, first + 5}));
  for (int i = 0; i < static_cast<int>(harmony.size()); ++i) {
    EXPECT_EQ(t.token_types[first + i], TokenizerData::kControl) << harmony[i];
  }
  EXPECT_EQ(t.printed_control_ids,
            (std::vector<int>{first, first + 1, first + 2, first + 3, first + 6}));
  // Decoding prints the structure, not the end tokens; user text cannot make the structure.
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = CreateTokenizer(t);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ((*tokenizer)->Decode({first + 1, first + 2, first + 3, first + 4}),
            "<|channel|><|message|><|end|>");
  const std::vector<int> user_text = (*tokenizer)->Encode("<|channel|>", /*add_bos=*/false);
  EXPECT_GT(user_text.size(), 1u);
  EXPECT_EQ(std::count(user_text.begin(), user_text.end(), first + 1), 0);
  EXPECT_EQ((*tokenizer)->Decode(user_text), "<|channel|>");
}

TEST(GgufModelTest, EmbedsTheRealLlama2Vocabulary) {
  TEXTGEN_REQUIRE_SHARED_FILE(LlamaTokenizerBin());
  RandomModelSpec spec;
  spec.vocab_size = 32000;
  spec.tokenizer_path = LlamaTokenizerBin();
  auto writer = BuildRandomModel(spec);
  ASSERT_TRUE(writer.ok()) << writer.status();
  auto model = Build(writer->Serialize());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->tokenizer.tokens[1], "<s>");
  EXPECT_EQ(model->tokenizer.tokens[13], "<0x0A>");
  EXPECT_EQ(model->tokenizer.tokens[29871], "\xE2\x96\x81");  // "▁" in the Llama 2 vocab
  EXPECT_EQ(model->tokenizer.scores.size(), 32000u);
}

}  // namespace
}  // namespace textgen::model
