// Engine tests: greedy golden ids of a real model (stories260K, ids from llama.cpp in its
// PROVENANCE.md), batch invariance (bitwise), synthetic llama/gpt2 models against a naive
// forward built from the reference ops, and input validation.
#include "model/runtime/engine.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/arch/architectures.h"
#include "model/format/model_loader.h"
#include "model/kernels/onednn_matmul.h"
#include "model/kernels/quant/quant_matmul.h"
#include "model/kernels/reference.h"
#include "model/runtime/transformer.h"
#include "tests/testing/reserve_and_forward.h"
#include "tests/testing/shared_files.h"
#include "tests/testing/temp_files.h"
#include "tests/tools/random_gguf.h"

namespace textgen::model {
namespace {

using ::textgen::testing::ReserveAndForward;

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

const std::vector<int> kPrompt = {1, 403, 407, 261, 378};
const std::vector<int> kGoldenAfterPrompt = {
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337,
    410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394,
    261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432};
const std::vector<int> kGoldenAfterBos = {
    403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338,
    401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385,
    328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267};

std::string SharedModel(const std::string& file) {
  return ::textgen::test_support::SharedModelPath("stories260K/" + file);
}

int Argmax(std::span<const float> row) {
  return static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());
}

std::unique_ptr<Engine> MakeEngine(const LoadedModel& model, bool bf16, int max_tokens = 64,
                                   bool kv_f16 = false) {
  EngineOptions options;
  options.bf16 = bf16;
  options.kv_cache_f16 = kv_f16;
  options.max_batch_tokens = max_tokens;
  options.kv_cache_bytes = int64_t{64} << 20;
  auto engine = Engine::Create(model, options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

// Greedy decoding: the prompt as one chunk or token by token, then `steps` argmax tokens.
std::vector<int> Greedy(Engine& engine, const std::vector<int>& prompt, int steps,
                        bool prefill_as_one_chunk) {
  const SequenceId seq = engine.kv_cache().NewSequence();
  std::vector<int> out;
  int next = -1;
  if (prefill_as_one_chunk) {
    SequenceChunk chunk{seq, prompt, true};
    auto r = ReserveAndForward(engine, {&chunk, 1});
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return out;
    next = Argmax(r->Row(0));
  } else {
    for (size_t i = 0; i < prompt.size(); ++i) {
      SequenceChunk chunk{seq, {&prompt[i], 1}, i + 1 == prompt.size()};
      auto r = ReserveAndForward(engine, {&chunk, 1});
      EXPECT_TRUE(r.ok()) << r.status();
      if (!r.ok()) return out;
      if (i + 1 == prompt.size()) next = Argmax(r->Row(0));
    }
  }
  while (static_cast<int>(out.size()) < steps) {
    out.push_back(next);
    SequenceChunk chunk{seq, {&out.back(), 1}, true};
    auto r = ReserveAndForward(engine, {&chunk, 1});
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return out;
    next = Argmax(r->Row(0));
  }
  return out;
}

// ============================================================================
// Golden greedy ids
// ============================================================================

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, GreedyIdsMatchReference) {
  const std::string path = SharedModel(GetParam());
  TEXTGEN_REQUIRE_SHARED_FILE(path);
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status();
  auto engine = MakeEngine(*model, /*bf16=*/false);
  ASSERT_NE(engine, nullptr);
  EXPECT_THAT(Greedy(*engine, kPrompt, 48, /*prefill_as_one_chunk=*/true),
              ElementsAreArray(kGoldenAfterPrompt));
  EXPECT_THAT(Greedy(*engine, kPrompt, 48, /*prefill_as_one_chunk=*/false),
              ElementsAreArray(kGoldenAfterPrompt));
  EXPECT_THAT(Greedy(*engine, {1}, 48, /*prefill_as_one_chunk=*/true),
              ElementsAreArray(kGoldenAfterBos));
  EXPECT_EQ(engine->kv_cache().num_sequences(), 3);
}

INSTANTIATE_TEST_SUITE_P(Stories260K, GoldenTest,
                         ::testing::Values("stories260K.gguf", "stories260K.bin"));

// ============================================================================
// Batch invariance: a sequence's logits are bitwise the same alone or in any batch
// ============================================================================

struct InvarianceSeq {
  std::vector<int> history;  // prefilled first (in a batch of its own)
  std::vector<int> step;     // the chunk in the compared step (1 token = decode)
};

void CheckBatchInvariance(const LoadedModel& model, bool bf16, bool kv_f16 = false) {
  const int vocab = model.config.vocab_size;
  std::mt19937 rng(7);
  auto random_tokens = [&](int n) {
    std::vector<int> t(n);
    for (int& x : t) x = static_cast<int>(rng() % vocab);
    return t;
  };
  // Different positions, decode tokens and prefill chunks mixed, a block boundary crossed.
  std::vector<InvarianceSeq> seqs = {{random_tokens(5), random_tokens(1)},
                                     {random_tokens(31), random_tokens(1)},
                                     {random_tokens(1), random_tokens(12)},
                                     {random_tokens(16), random_tokens(1)},
                                     {{}, random_tokens(9)},
                                     {random_tokens(40), random_tokens(3)}};
  // Alone: each sequence in its own engine.
  std::vector<std::vector<float>> alone;
  for (const InvarianceSeq& s : seqs) {
    auto engine = MakeEngine(model, bf16, 64, kv_f16);
    ASSERT_NE(engine, nullptr);
    const SequenceId id = engine->kv_cache().NewSequence();
    if (!s.history.empty()) {
      SequenceChunk h{id, s.history, false};
      ASSERT_TRUE(ReserveAndForward(*engine, {&h, 1}).ok());
    }
    SequenceChunk c{id, s.step, true};
    auto r = ReserveAndForward(*engine, {&c, 1});
    ASSERT_TRUE(r.ok()) << r.status();
    alone.emplace_back(r->Row(0).begin(), r->Row(0).end());
  }
  // Together: all histories in one batch (sequence 4 has none), then all steps in one batch.
  auto engine = MakeEngine(model, bf16, /*max_tokens=*/128, kv_f16);
  ASSERT_NE(engine, nullptr);
  std::vector<SequenceId> ids;
  std::vector<SequenceChunk> batch;
  for (const InvarianceSeq& s : seqs) {
    ids.push_back(engine->kv_cache().NewSequence());
    if (!s.history.empty()) batch.push_back({ids.back(), s.history, true});
  }
  ASSERT_TRUE(ReserveAndForward(*engine, batch).ok());
  batch.clear();
  // Reverse order, so every sequence sits at a different row offset than in the prefill.
  for (int i = static_cast<int>(seqs.size()) - 1; i >= 0; --i) {
    batch.push_back({ids[i], seqs[i].step, true});
  }
  auto r = ReserveAndForward(*engine, batch);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows, static_cast<int>(seqs.size()));
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int row = static_cast<int>(seqs.size() - 1 - i);
    EXPECT_EQ(std::memcmp(r->Row(row).data(), alone[i].data(), sizeof(float) * vocab), 0)
        << "sequence " << i << " (bf16=" << bf16 << ", kv_f16=" << kv_f16 << ") differs in a batch";
  }
}

// Speculative decoding's premise: a chunk's per-token logits are bitwise those of decoding its
// tokens one at a time (crossing a block boundary, next to another sequence's chunk).
void CheckChunkLogitsEqualDecode(const LoadedModel& model, bool bf16, bool kv_f16 = false) {
  const int vocab = model.config.vocab_size;
  std::mt19937 rng(11);
  std::vector<int> history(13), chunk(9), other(4);
  for (std::vector<int>* v : {&history, &chunk, &other}) {
    for (int& x : *v) x = static_cast<int>(rng() % vocab);
  }
  std::vector<std::vector<float>> decoded;
  {
    auto engine = MakeEngine(model, bf16, 64, kv_f16);
    ASSERT_NE(engine, nullptr);
    const SequenceId id = engine->kv_cache().NewSequence();
    SequenceChunk h{id, history, false};
    ASSERT_TRUE(ReserveAndForward(*engine, {&h, 1}).ok());
    for (size_t t = 0; t < chunk.size(); ++t) {
      SequenceChunk c{id, std::span<const int>(chunk).subspan(t, 1), true};
      auto r = ReserveAndForward(*engine, {&c, 1});
      ASSERT_TRUE(r.ok()) << r.status();
      decoded.emplace_back(r->Row(0).begin(), r->Row(0).end());
    }
  }
  auto engine = MakeEngine(model, bf16, 64, kv_f16);
  ASSERT_NE(engine, nullptr);
  const SequenceId id = engine->kv_cache().NewSequence();
  const SequenceId neighbour = engine->kv_cache().NewSequence();
  SequenceChunk h{id, history, false};
  ASSERT_TRUE(ReserveAndForward(*engine, {&h, 1}).ok());
  std::vector<SequenceChunk> batch = {
      {neighbour, other, true}, {id, chunk, true, HiddenRows::kNone, /*logits_per_token=*/true}};
  auto r = ReserveAndForward(*engine, batch);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows, 1 + static_cast<int>(chunk.size()));
  for (size_t t = 0; t < chunk.size(); ++t) {
    EXPECT_EQ(std::memcmp(r->Row(1 + static_cast<int>(t)).data(), decoded[t].data(),
                          sizeof(float) * vocab),
              0)
        << "token " << t << " of the chunk (bf16=" << bf16 << ", kv_f16=" << kv_f16 << ")";
  }
}

// A random-weight model of `spec`, written to the test's temp dir as NAME.gguf and loaded.
absl::StatusOr<LoadedModel> WriteAndLoad(const RandomModelSpec& spec, const std::string& name) {
  absl::StatusOr<GgufWriter> writer = BuildRandomModel(spec);
  if (!writer.ok()) return writer.status();
  const std::string path = test_support::TestTempPath(name + ".gguf");
  if (absl::Status written = writer->WriteFile(path); !written.ok()) return written;
  return LoadModel(path);
}

TEST(BatchInvarianceTest, Stories260KF32) {
  const std::string path = SharedModel("stories260K.gguf");
  TEXTGEN_REQUIRE_SHARED_FILE(path);
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status();
  CheckBatchInvariance(*model, /*bf16=*/false);
}

TEST(BatchInvarianceTest, Stories260KBf16) {
  if (!ops::CpuHasBf16()) GTEST_SKIP() << "CPU lacks AVX512-BF16";
  const std::string path = SharedModel("stories260K.gguf");
  TEXTGEN_REQUIRE_SHARED_FILE(path);
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status();
  CheckBatchInvariance(*model, /*bf16=*/true);
}

TEST(BatchInvarianceTest, Stories260KF16KvCache) {
  const std::string path = SharedModel("stories260K.gguf");
  TEXTGEN_REQUIRE_SHARED_FILE(path);
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status();
  CheckBatchInvariance(*model, /*bf16=*/false, /*kv_f16=*/true);
}

// Every architecture keeps the guarantee (random weights in each one's GGUF layout; a head
// size that is not dim / heads where the architecture allows it).
class ArchitectureInvarianceTest : public ::testing::TestWithParam<Architecture> {};

void CheckArchitectureInvariance(const RandomModelSpec& spec, const std::string& name) {
  auto model = WriteAndLoad(spec, "invariance_" + name);
  ASSERT_TRUE(model.ok()) << model.status();
  CheckBatchInvariance(*model, /*bf16=*/false);
  CheckBatchInvariance(*model, /*bf16=*/false, /*kv_f16=*/true);
  if (ops::CpuHasBf16()) CheckBatchInvariance(*model, /*bf16=*/true);
  CheckChunkLogitsEqualDecode(*model, /*bf16=*/false);
  CheckChunkLogitsEqualDecode(*model, /*bf16=*/false, /*kv_f16=*/true);
  if (ops::CpuHasBf16()) CheckChunkLogitsEqualDecode(*model, /*bf16=*/true);
}

TEST_P(ArchitectureInvarianceTest, SameLogitsAloneAndInABatch) {
  RandomModelSpec spec;
  spec.architecture = GetParam();
  if (spec.architecture != Architecture::kGpt2) spec.head_dim = 24;  // dim 64, 4 heads
  // Gemma 3's head size: the wide AVX-512 attention path (one accumulator set) with a window.
  if (spec.architecture == Architecture::kGemma3) spec.head_dim = 256;
  if (spec.architecture == Architecture::kGpt2) spec.n_kv_heads = spec.n_heads;
  spec.tied_output = false;
  // A window shorter than most sequences below, so local layers really slide.
  if (SpecOf(spec.architecture).sliding.pattern > 0) spec.sliding_window = 6;
  // Mixtures: the tokens of a batch share experts in changing groups.
  if (SpecOf(spec.architecture).experts.required) {
    spec.experts = 8, spec.experts_used = 2, spec.expert_hidden_dim = 48;
  }
  // LFM2's mixtures keep a dense feed-forward in their first layer.
  if (SpecOf(spec.architecture).experts.leading_dense_key) spec.leading_dense_layers = 1;
  // Hybrids: recurrent, attention, recurrent, attention (states and K/V side by side).
  if (SpecOf(spec.architecture).recurrent_mixer != LayerMixer::kAttention) {
    // Nemotron-H: Mamba2, MLP, attention, MLP, Mamba2, MLP.
    spec.n_layers = SpecOf(spec.architecture).single_sublayer_blocks ? 6 : 4;
    spec.full_attention_interval = 2;
  }
  CheckArchitectureInvariance(spec, ArchitectureName(spec.architecture));
}

INSTANTIATE_TEST_SUITE_P(Architectures, ArchitectureInvarianceTest,
                         ::testing::Values(Architecture::kLlama, Architecture::kGpt2,
                                           Architecture::kQwen2, Architecture::kQwen3,
                                           Architecture::kPhi3, Architecture::kGemma2,
                                           Architecture::kGemma3, Architecture::kQwen3Moe,
                                           Architecture::kGptOss, Architecture::kQwen35,
                                           Architecture::kQwen35Moe, Architecture::kLfm2,
                                           Architecture::kQwen3Next, Architecture::kNemotronH,
                                           Architecture::kGraniteHybrid,
                                           Architecture::kNemotronHMoe, Architecture::kLfm2Moe),
                         [](const ::testing::TestParamInfo<Architecture>& param_info) {
                           std::string name = ArchitectureName(param_info.param);
                           std::erase(name, '-');
                           return name;
                         });

// Mixtral's layout: a llama file with experts, 4 of which the router picks 3 per token.
TEST(MixtureInvarianceTest, LlamaWithExperts) {
  RandomModelSpec spec;
  spec.experts = 4, spec.experts_used = 3;
  spec.tied_output = false;
  CheckArchitectureInvariance(spec, "llama_experts");
}

// Encoders (bert, nomic-bert) return hidden states, not logits: each input's rows are bitwise
// the same alone and next to other inputs (f32 and half KV, bf16 where the CPU has it), every
// token sees the whole input (changing the last token changes the first row), and the engine
// refuses what an encoder cannot do: logits, or a second chunk of an input.
class EncoderTest : public ::testing::TestWithParam<Architecture> {};

TEST_P(EncoderTest, BidirectionalHiddenStatesSameAloneAndInABatch) {
  RandomModelSpec spec;
  spec.architecture = GetParam();
  spec.n_kv_heads = spec.n_heads;
  auto model = WriteAndLoad(spec, std::string("encoder_") + ArchitectureName(spec.architecture));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE(model->config.causal);
  EXPECT_EQ(model->config.pooling, Pooling::kMean);
  const std::vector<std::vector<int>> inputs = {
      {2, 40, 77, 120, 3}, {2, 9, 3}, {2, 200, 201, 202, 203, 204, 205, 206, 207, 3}};
  const int dim = model->config.dim;
  auto hidden_rows = [&](Engine& engine, const std::vector<std::vector<int>>& batch) {
    std::vector<SequenceChunk> chunks;
    for (const auto& tokens : batch) {
      chunks.push_back({engine.kv_cache().NewSequence(), tokens, false, HiddenRows::kAll});
    }
    auto r = ReserveAndForward(engine, chunks);
    EXPECT_TRUE(r.ok()) << r.status();
    std::vector<std::vector<float>> rows;
    if (!r.ok()) return rows;
    for (int i = 0; i < r->hidden_rows; ++i) {
      rows.emplace_back(r->HiddenRow(i).begin(), r->HiddenRow(i).end());
    }
    return rows;
  };
  struct Mode {
    bool bf16, kv_f16;
  };
  std::vector<Mode> modes = {{false, false}, {false, true}};
  if (ops::CpuHasBf16()) modes.push_back({true, false});
  for (const Mode& mode : modes) {
    auto engine = MakeEngine(*model, mode.bf16, /*max_tokens=*/64, mode.kv_f16);
    ASSERT_NE(engine, nullptr);
    std::vector<std::vector<float>> alone;
    for (const auto& tokens : inputs) {
      for (auto& row : hidden_rows(*engine, {tokens})) alone.push_back(std::move(row));
    }
    EXPECT_EQ(hidden_rows(*engine, inputs), alone) << "bf16 " << mode.bf16;
    for (const auto& row : alone) {
      for (float v : row) ASSERT_TRUE(std::isfinite(v));
    }
    ASSERT_EQ(static_cast<int>(alone[0].size()), dim);
    // The first row depends on the last token: attention is bidirectional.
    std::vector<int> changed = inputs[0];
    changed[3] = 121;
    EXPECT_NE(hidden_rows(*engine, {changed})[0], alone[0]);
  }

  auto engine = MakeEngine(*model, false);
  ASSERT_NE(engine, nullptr);
  const std::vector<int> tokens = inputs[0];
  SequenceChunk logits{engine->kv_cache().NewSequence(), tokens, true};
  auto r = ReserveAndForward(*engine, {&logits, 1});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("no LM head"));
  const SequenceId seq = engine->kv_cache().NewSequence();
  SequenceChunk first{seq, std::span<const int>(tokens).first(2), false, HiddenRows::kAll};
  ASSERT_TRUE(ReserveAndForward(*engine, {&first, 1}).ok());
  SequenceChunk second{seq, std::span<const int>(tokens).subspan(2), false, HiddenRows::kAll};
  r = ReserveAndForward(*engine, {&second, 1});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("one chunk"));
}

INSTANTIATE_TEST_SUITE_P(Encoders, EncoderTest,
                         ::testing::Values(Architecture::kBert, Architecture::kNomicBert),
                         [](const ::testing::TestParamInfo<Architecture>& param_info) {
                           std::string name = ArchitectureName(param_info.param);
                           std::erase(name, '-');
                           return name;
                         });

// Quantized files keep the guarantee through the integer kernels: one per quant type, and the
// mixes llama.cpp writes (Q4_K_M: Q4_K with Q6_K for the output and for attn_v and ffn_down in
// some layers; with 8 experts, Q8_0 attn_k/attn_v and Q5_K attn_output). K-quant
// rows are 256 elements, so these models are wider than the ones above.
struct QuantMix {
  const char* name;
  DType dtype;
  Architecture architecture = Architecture::kLlama;
  bool k_quant_mix = false;  // llama.cpp's *_K_M mix of types on `dtype`
  int experts = 0;           // a mixture: 8 experts 256 wide, 2 per token
};

class QuantizedInvarianceTest : public ::testing::TestWithParam<QuantMix> {};

TEST_P(QuantizedInvarianceTest, SameLogitsAloneAndInABatch) {
  if (!ops::CpuSupportsQuantMatmul()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  const QuantMix mix = GetParam();
  RandomModelSpec spec = QuantizedModelSpec(mix.dtype, mix.k_quant_mix);
  spec.architecture = mix.architecture;
  if (mix.experts > 0) spec.experts = mix.experts, spec.experts_used = 2;
  spec.expert_hidden_dim = 256;
  // Nemotron-H: Mamba2, MLP, attention, MLP.
  if (SpecOf(mix.architecture).single_sublayer_blocks) {
    spec.n_layers = 4, spec.full_attention_interval = 2;
  }
  auto model = WriteAndLoad(spec, std::string("invariance_") + mix.name);
  ASSERT_TRUE(model.ok()) << model.status();
  // The file is of that type (a mix keeps some tensors in others: look across the layers).
  bool typed = false;
  for (const LayerWeights& l : model->weights.layers) {
    for (const TensorView* t : {&l.wq, &l.ssm_input, &l.w_up, &l.gate_experts}) {
      typed = typed || (!t->empty() && t->dtype == mix.dtype);
    }
  }
  ASSERT_TRUE(typed) << mix.name;
  {
    // Real numbers, not a degenerate model whose logits would compare equal anyway.
    auto engine = MakeEngine(*model, /*bf16=*/false);
    ASSERT_NE(engine, nullptr);
    const std::vector<int> tokens = {1, 17, 300, 42};
    SequenceChunk chunk{engine->kv_cache().NewSequence(), tokens, true};
    auto r = ReserveAndForward(*engine, {&chunk, 1});
    ASSERT_TRUE(r.ok()) << r.status();
    float lo = r->Row(0)[0], hi = lo;
    for (float v : r->Row(0)) {
      ASSERT_TRUE(std::isfinite(v));
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    EXPECT_GT(hi - lo, 0.01f) << mix.name;
  }
  CheckBatchInvariance(*model, /*bf16=*/false);
  CheckBatchInvariance(*model, /*bf16=*/false, /*kv_f16=*/true);
}

INSTANTIATE_TEST_SUITE_P(
    QuantTypes, QuantizedInvarianceTest,
    ::testing::Values(QuantMix{"Q4_K_M", DType::kQ4_K, Architecture::kLlama, true},
                      QuantMix{"Q5_K_M", DType::kQ5_K, Architecture::kLlama, true},
                      QuantMix{"Q6_K", DType::kQ6_K}, QuantMix{"Q8_0", DType::kQ8_0},
                      QuantMix{"Q4_0", DType::kQ4_0}, QuantMix{"Q4_1", DType::kQ4_1},
                      QuantMix{"Q5_0", DType::kQ5_0}, QuantMix{"Q5_1", DType::kQ5_1},
                      // Q/K/V biases through the quantized layer's bias
                      QuantMix{"qwen2_Q4_K_M", DType::kQ4_K, Architecture::kQwen2, true},
                      // Experts quantized, the router in f32
                      QuantMix{"qwen3moe_Q4_K_M", DType::kQ4_K, Architecture::kQwen3Moe, true, 8},
                      QuantMix{"qwen3moe_Q8_0", DType::kQ8_0, Architecture::kQwen3Moe, false, 8},
                      QuantMix{"qwen3moe_MXFP4", DType::kMXFP4, Architecture::kQwen3Moe, false, 8},
                      QuantMix{"llama_experts_Q6_K", DType::kQ6_K, Architecture::kLlama, false, 4},
                      // gpt-oss's file: MXFP4 everywhere here (llama.cpp's keeps the rest Q8_0),
                      // biases through the quantized experts
                      QuantMix{"gptoss_MXFP4", DType::kMXFP4, Architecture::kGptOss, false, 8},
                      // Gated DeltaNet and gated attention on the quantized kernels
                      QuantMix{"qwen35_Q4_K_M", DType::kQ4_K, Architecture::kQwen35, true},
                      QuantMix{"qwen35_Q8_0", DType::kQ8_0, Architecture::kQwen35},
                      // Routed experts and the gated shared expert beside recurrent layers
                      QuantMix{"qwen35moe_Q4_K_M", DType::kQ4_K, Architecture::kQwen35Moe, true, 8},
                      // LFM2's short convolutions on the quantized kernels
                      QuantMix{"lfm2_Q4_K_M", DType::kQ4_K, Architecture::kLfm2, true},
                      // Mamba2 layers and Nemotron-H's squared-ReLU blocks on the quantized
                      // kernels
                      QuantMix{"nemotronh_Q4_K_M", DType::kQ4_K, Architecture::kNemotronH, true}),
    [](const ::testing::TestParamInfo<QuantMix>& param_info) {
      return std::string(param_info.param.name);
    });

// The memory check counts quantized weights at their packed size (the file's bytes, +2.8% for
// Q4_K/Q5_K), not at the f32 size they had when dequantized at load.
TEST(EngineMemoryTest, CountsQuantizedWeightsAtTheirPackedSize) {
  if (!ops::CpuSupportsQuantMatmul()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  RandomModelSpec spec = QuantizedModelSpec(DType::kQ4_K, /*k_quant_mix=*/true);
  auto model = WriteAndLoad(spec, "memory_q4_k");
  ASSERT_TRUE(model.ok()) << model.status();
  int64_t matrix_bytes = 0;
  for (const LayerWeights& l : model->weights.layers) {
    for (const TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      matrix_bytes += static_cast<int64_t>(ByteSize(*t));
    }
  }
  matrix_bytes += static_cast<int64_t>(ByteSize(model->weights.output));
  TransformerOptions options{.threads = 1, .max_batch_tokens = 1};
  const int64_t quantized = Transformer::MemoryNeeded(model->config, model->weights, options);
  options.quantized_kernels = false;
  const int64_t dequantized = Transformer::MemoryNeeded(model->config, model->weights, options);
  // Packed: at least the file's matrix bytes and at most 3% more, plus a little scratch.
  EXPECT_GE(quantized, matrix_bytes);
  EXPECT_LT(quantized, matrix_bytes * 103 / 100 + (int64_t{1} << 20));
  EXPECT_GT(dequantized, 6 * matrix_bytes);  // f32 is ~7x Q4_K
}

// A mixture's experts are packed, every one of them (a token may route to any), at their
// quantized size.
TEST(EngineMemoryTest, CountsEveryExpertAtItsPackedSize) {
  if (!ops::CpuSupportsQuantMatmul()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  RandomModelSpec spec = QuantizedModelSpec(DType::kQ4_K, /*k_quant_mix=*/true);
  spec.architecture = Architecture::kQwen3Moe;
  spec.experts = 16, spec.experts_used = 4, spec.expert_hidden_dim = 256;
  auto model = WriteAndLoad(spec, "memory_experts_q4_k");
  ASSERT_TRUE(model.ok()) << model.status();
  int64_t matrix_bytes = 0, expert_bytes = 0;
  for (const LayerWeights& l : model->weights.layers) {
    for (const TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo}) {
      matrix_bytes += static_cast<int64_t>(ByteSize(*t));
    }
    for (const TensorView* t : {&l.gate_experts, &l.up_experts, &l.down_experts}) {
      expert_bytes += static_cast<int64_t>(ByteSize(*t));
    }
    matrix_bytes += static_cast<int64_t>(ByteSize(l.router));  // f32, staged for oneDNN
  }
  matrix_bytes += expert_bytes + static_cast<int64_t>(ByteSize(model->weights.output));
  TransformerOptions options{.threads = 1, .max_batch_tokens = 1};
  const int64_t quantized = Transformer::MemoryNeeded(model->config, model->weights, options);
  EXPECT_GT(expert_bytes, matrix_bytes / 2);
  EXPECT_GE(quantized, matrix_bytes);
  EXPECT_LT(quantized, matrix_bytes * 103 / 100 + (int64_t{1} << 20));
}

// A model that cannot fit is refused before any weight is packed, with the numbers and what
// would make it fit.
TEST(EngineMemoryTest, RefusesAModelThatDoesNotFitInTheMemoryAvailable) {
  const std::string path = SharedModel("stories260K.gguf");
  TEXTGEN_REQUIRE_SHARED_FILE(path);
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status();
  EngineOptions options;
  options.kv_cache_bytes = int64_t{64} << 20;
  options.available_memory_bytes = int64_t{32} << 20;  // less than the KV budget alone
  auto engine = Engine::Create(*model, options);
  ASSERT_EQ(engine.status().code(), absl::StatusCode::kResourceExhausted) << engine.status();
  EXPECT_THAT(engine.status().message(), HasSubstr("KV cache budget: 0.1 GiB"));
  EXPECT_THAT(engine.status().message(), HasSubstr("but 0.0 GiB is available"));
  EXPECT_THAT(engine.status().message(), HasSubstr("a smaller KV cache budget"));
  // The weights dominate: f32 is told about bf16, bf16 that it is out of room.
  options.kv_cache_bytes = 1024;
  options.available_memory_bytes = 1024;
  engine = Engine::Create(*model, options);
  ASSERT_EQ(engine.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(engine.status().message(), HasSubstr("computing in bf16 halves the weights"));
  options.bf16 = true;
  engine = Engine::Create(*model, options);
  ASSERT_EQ(engine.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(engine.status().message(), HasSubstr("needs more memory than that even in bf16"));
  // Enough for the budget and the weights (stories260K packs to well under 16 MiB).
  options.bf16 = false;
  options.kv_cache_bytes = int64_t{64} << 20;
  options.available_memory_bytes = int64_t{80} << 20;
  engine = Engine::Create(*model, options);
  EXPECT_TRUE(engine.ok()) << engine.status();
}

// A half-precision KV cache rounds K and V to 11 significant bits: logits move a little,
// greedy decoding of the reference prompt does not.
TEST(F16KvCacheTest, CloseToF32CacheAndSameGreedyTokens) {
  const std::string path = SharedModel("stories260K.gguf");
  TEXTGEN_REQUIRE_SHARED_FILE(path);
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status();
  auto f32 = MakeEngine(*model, false, 64, /*kv_f16=*/false);
  auto f16 = MakeEngine(*model, false, 64, /*kv_f16=*/true);
  ASSERT_TRUE(f32 != nullptr && f16 != nullptr);
  EXPECT_EQ(f16->kv_cache().block_bytes() * 2, f32->kv_cache().block_bytes());
  // What a caller sizing a cache for this model computes (the draft model's budget does).
  EXPECT_EQ(KvBlockBytes(KvCacheLayoutFor(model->config, EngineOptions{.kv_cache_f16 = true})),
            f16->kv_cache().block_bytes());
  const SequenceId a = f32->kv_cache().NewSequence();
  const SequenceId b = f16->kv_cache().NewSequence();
  std::vector<int> next_a(kPrompt.begin(), kPrompt.end()), next_b = next_a;
  float max_diff = 0, max_abs = 0;
  for (int step = 0; step < 8; ++step) {
    SequenceChunk ca{a, next_a, true}, cb{b, next_b, true};
    auto ra = ReserveAndForward(*f32, {&ca, 1});
    auto rb = ReserveAndForward(*f16, {&cb, 1});
    ASSERT_TRUE(ra.ok() && rb.ok());
    for (int i = 0; i < ra->vocab_size; ++i) {
      max_diff = std::max(max_diff, std::fabs(ra->Row(0)[i] - rb->Row(0)[i]));
      max_abs = std::max(max_abs, std::fabs(ra->Row(0)[i]));
    }
    EXPECT_EQ(Argmax(rb->Row(0)), kGoldenAfterPrompt[step]) << "step " << step;
    next_a = {Argmax(ra->Row(0))};
    next_b = {Argmax(rb->Row(0))};
  }
  EXPECT_GT(max_diff, 0.0f);  // the cache really is half precision
  EXPECT_LT(max_diff, 0.01f * max_abs);
}

TEST(Bf16Test, CloseToF32AndSameFirstToken) {
  if (!ops::CpuHasBf16()) GTEST_SKIP() << "CPU lacks AVX512-BF16";
  const std::string path = SharedModel("stories260K.gguf");
  TEXTGEN_REQUIRE_SHARED_FILE(path);
  auto model = LoadModel(path);
  ASSERT_TRUE(model.ok()) << model.status();
  auto f32 = MakeEngine(*model, false);
  auto bf16 = MakeEngine(*model, true);
  SequenceChunk a{f32->kv_cache().NewSequence(), kPrompt, true};
  SequenceChunk b{bf16->kv_cache().NewSequence(), kPrompt, true};
  auto ra = ReserveAndForward(*f32, {&a, 1});
  auto rb = ReserveAndForward(*bf16, {&b, 1});
  ASSERT_TRUE(ra.ok() && rb.ok());
  float max_diff = 0, max_abs = 0;
  for (int i = 0; i < ra->vocab_size; ++i) {
    max_diff = std::max(max_diff, std::fabs(ra->Row(0)[i] - rb->Row(0)[i]));
    max_abs = std::max(max_abs, std::fabs(ra->Row(0)[i]));
  }
  EXPECT_LT(max_diff, 0.05f * max_abs);
  EXPECT_EQ(Argmax(rb->Row(0)), kGoldenAfterPrompt[0]);
}

}  // namespace
}  // namespace textgen::model
