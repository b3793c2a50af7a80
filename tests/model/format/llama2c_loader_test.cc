// llama2.c legacy checkpoints: layout on a synthetic file, header/size validation, tokenizer
// discovery.
#include "model/format/llama2c_loader.h"

#include <cstring>
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/model/format/loader_test_util.h"

namespace textgen::model {
namespace {

using ::testing::HasSubstr;
using namespace ::textgen::model::testing;

// A checkpoint whose float number i (counted from the first weight) has the value i, so each
// view's first element tells where it starts.
std::string SyntheticCheckpoint(const std::vector<int32_t>& header, int64_t floats) {
  std::string bytes(28 + floats * 4, '\0');
  std::memcpy(bytes.data(), header.data(), 28);
  for (int64_t i = 0; i < floats; ++i) Poke<float>(bytes, 28 + i * 4, static_cast<float>(i));
  return bytes;
}

// dim 8, hidden 16, 2 layers, 2 heads, 1 kv head, vocab 10 (untied: -10), seq_len 4.
constexpr int64_t kDim = 8, kHidden = 16, kLayers = 2, kKv = 4, kVocab = 10, kSeq = 4;
constexpr int64_t kFreq = kSeq * (kDim / 2) / 2;  // seq_len * head_size / 2
constexpr int64_t kFloatsTied =
    kVocab * kDim + kLayers * (2 * kDim + 2 * kDim * kDim + 2 * kKv * kDim + 3 * kHidden * kDim) +
    kDim + 2 * kFreq;

TEST(Llama2cLoaderTest, MapsEveryArrayInFileOrderAndSkipsFreqCis) {
  const std::string bytes =
      SyntheticCheckpoint({8, 16, 2, 2, 1, -10, 4}, kFloatsTied + kVocab * kDim);
  auto model = BuildModelFromLlama2c(Bytes(bytes), "synthetic");
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_EQ(c.vocab_size, 10);
  EXPECT_FALSE(c.tied_output);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.kv_dim(), 4);
  EXPECT_EQ(c.rope_dim, 4);
  EXPECT_EQ(c.context_length, 4);
  const ModelWeights& w = model->weights;
  const auto first = [](const TensorView& t) { return Floats(t)[0]; };
  int64_t o = 0;
  EXPECT_EQ(first(w.token_embedding), o);
  o += kVocab * kDim;
  EXPECT_EQ(first(w.layers[0].attn_norm), o);
  EXPECT_EQ(first(w.layers[1].attn_norm), o + kDim);
  o += kLayers * kDim;
  EXPECT_EQ(first(w.layers[1].wq), o + kDim * kDim);
  o += kLayers * kDim * kDim;
  EXPECT_EQ(first(w.layers[1].wk), o + kKv * kDim);
  EXPECT_EQ(w.layers[1].wk.rows, kKv);
  o += kLayers * kKv * kDim;
  EXPECT_EQ(first(w.layers[0].wv), o);
  o += kLayers * kKv * kDim;
  EXPECT_EQ(first(w.layers[1].wo), o + kDim * kDim);
  o += kLayers * kDim * kDim;
  EXPECT_EQ(first(w.layers[1].ffn_norm), o + kDim);
  o += kLayers * kDim;
  EXPECT_EQ(first(w.layers[1].w_gate), o + kHidden * kDim);  // w1
  o += kLayers * kHidden * kDim;
  EXPECT_EQ(first(w.layers[1].w_down), o + kDim * kHidden);  // w2
  EXPECT_EQ(w.layers[1].w_down.cols, kHidden);
  o += kLayers * kDim * kHidden;
  EXPECT_EQ(first(w.layers[1].w_up), o + kHidden * kDim);  // w3
  o += kLayers * kHidden * kDim;
  EXPECT_EQ(first(w.output_norm), o);
  o += kDim + 2 * kFreq;  // freq_cis_real / imag skipped
  EXPECT_EQ(first(w.output), o);
  EXPECT_EQ(Floats(w.output).back(), o + kVocab * kDim - 1);  // ends at the end of the file
}

TEST(Llama2cLoaderTest, FileSizeMustMatchTheHeaderExactly) {
  const std::string tied = SyntheticCheckpoint({8, 16, 2, 2, 1, 10, 4}, kFloatsTied);
  EXPECT_TRUE(BuildModelFromLlama2c(Bytes(tied), "x").ok());
  for (int64_t delta : {-4, 4}) {
    const std::string bytes = SyntheticCheckpoint({8, 16, 2, 2, 1, 10, 4}, kFloatsTied + delta / 4);
    auto model = BuildModelFromLlama2c(Bytes(bytes), "x");
    EXPECT_THAT(model.status().message(),
                HasSubstr("file size " + std::to_string(bytes.size()) + " does not match the " +
                          std::to_string(28 + kFloatsTied * 4) + " bytes the header implies"));
  }
}

TEST(Llama2cLoaderTest, HeaderFieldsAreValidated) {
  struct Case {
    std::vector<int32_t> header;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{0, 16, 2, 2, 1, 10, 4}, "dim = 0 is not in"},
      {{8, 16, 2, 3, 1, 10, 4}, "dim 8 / n_heads 3"},
      {{8, 16, 2, 2, 3, 10, 4}, "n_kv_heads = 3 is not in [1, 2]"},
      {{8, 16, 2, 2, 1, 0, 4}, "vocab_size = 0"},
      {{8, 16, -1, 2, 1, 10, 4}, "n_layers = -1"},
      {{8, 16, 2, 2, 1, 10, 0}, "seq_len = 0"},
  };
  for (const Case& c : cases) {
    const std::string bytes = SyntheticCheckpoint(c.header, 16);
    EXPECT_THAT(BuildModelFromLlama2c(Bytes(bytes), "x").status().message(), HasSubstr(c.message));
  }
  EXPECT_THAT(BuildModelFromLlama2c(Bytes(std::string(20, '\1')), "x").status().message(),
              HasSubstr("the header needs 28"));
}

TEST(Llama2cLoaderTest, TruncatedRealCheckpointIsRejected) {
  TEXTGEN_REQUIRE_SHARED_FILE(Stories260KBin());
  const std::string bytes = ReadFile(Stories260KBin());
  auto model = BuildModelFromLlama2c(Bytes(bytes).first(bytes.size() - 4), "x");
  EXPECT_THAT(model.status().message(),
              HasSubstr("file size 1056536 does not match the 1056540 bytes the header implies"));
}

TEST(Llama2cLoaderTest, TokenizerIsFoundOrNamed) {
  TEXTGEN_REQUIRE_SHARED_FILE(Stories260KBin());
  const std::string dir = TestTempPath("llama2c_no_tokenizer");
  std::filesystem::create_directories(dir);
  const std::string copy = dir + "/model.bin";
  std::filesystem::copy_file(Stories260KBin(), copy,
                             std::filesystem::copy_options::overwrite_existing);
  auto mapped = MappedFile::Open(copy);
  ASSERT_TRUE(mapped.ok());
  auto missing = LoadLlama2cModel(std::move(*mapped), {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("neither tokenizer.bin nor tok512.bin"));

  LoadOptions options;
  options.tokenizer_path = Stories260KDir() + "/tok512.bin";
  auto explicit_path = LoadLlama2cModel(*MappedFile::Open(copy), options);
  ASSERT_TRUE(explicit_path.ok()) << explicit_path.status();
  EXPECT_EQ(explicit_path->tokenizer.tokens.size(), 512u);
  EXPECT_EQ(explicit_path->config.name, "model");

  // A vocabulary of the wrong size is reported with the checkpoint's path.
  options.tokenizer_path = LlamaTokenizerBin();
  if (std::filesystem::exists(LlamaTokenizerBin())) {
    auto wrong = LoadLlama2cModel(*MappedFile::Open(copy), options);
    EXPECT_FALSE(wrong.ok());
    EXPECT_THAT(wrong.status().message(), HasSubstr("tokenizer for llama2.c checkpoint"));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace textgen::model
