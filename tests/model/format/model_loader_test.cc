// LoadModel on the real stories260K files (GGUF and llama2.c) and on bad inputs.
#include "model/format/model_loader.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/format/mapped_file.h"
#include "tests/model/format/loader_test_util.h"
#include "tests/testing/temp_files.h"

namespace textgen::model {
namespace {

using ::testing::HasSubstr;
using namespace ::textgen::model::testing;

// Hyperparameters as PROVENANCE.md states them (shared by both files).
void ExpectStories260KShape(const ModelConfig& c) {
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.kv_dim(), 32);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_EQ(c.rope_layout, RopeLayout::kAdjacentPairs);
}

TEST(ModelLoaderTest, LoadsStories260KGguf) {
  TEXTGEN_REQUIRE_SHARED_FILE(Stories260KGguf());
  auto model = LoadModel(Stories260KGguf());
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectStories260KShape(model->config);
  EXPECT_EQ(model->config.context_length, 2048);  // converter default, per PROVENANCE
  EXPECT_FALSE(model->config.tied_output);        // output.weight is an explicit copy
  EXPECT_EQ(model->file_dtype, DType::kF32);
  EXPECT_EQ(model->path, Stories260KGguf());
  EXPECT_NE(model->storage, nullptr);
  ASSERT_EQ(model->weights.layers.size(), 5u);
  const LayerWeights& l0 = model->weights.layers[0];
  EXPECT_EQ(l0.wk.rows, 32);
  EXPECT_EQ(l0.wk.cols, 64);
  EXPECT_EQ(l0.w_down.rows, 64);
  EXPECT_EQ(l0.w_down.cols, 172);
  EXPECT_TRUE(l0.bq.empty());

  const TokenizerData& tok = model->tokenizer;
  EXPECT_EQ(tok.kind, TokenizerData::Kind::kSentencePieceBpe);
  ASSERT_EQ(tok.tokens.size(), 512u);
  EXPECT_EQ(tok.scores.size(), 512u);
  ASSERT_EQ(tok.token_types.size(), 512u);
  EXPECT_EQ(tok.bos_id, 1);
  EXPECT_EQ(tok.eos_id, 2);
  EXPECT_EQ(tok.unk_id, 0);
  EXPECT_EQ(tok.pad_id, -1);
  EXPECT_EQ(tok.tokens[1], "<s>");
  EXPECT_EQ(tok.tokens[2], "</s>");
  EXPECT_EQ(tok.tokens[3], "<0x00>");
  EXPECT_EQ(tok.tokens[258], "<0xFF>");
  EXPECT_EQ(tok.token_types[0], TokenizerData::kUnknown);
  EXPECT_EQ(tok.token_types[1], TokenizerData::kControl);
  EXPECT_EQ(tok.token_types[3], TokenizerData::kByte);
  EXPECT_EQ(tok.token_types[258], TokenizerData::kByte);
  EXPECT_EQ(tok.token_types[259], TokenizerData::kNormal);
}

TEST(ModelLoaderTest, LoadsStories260KLlama2cCheckpointWithSiblingTokenizer) {
  TEXTGEN_REQUIRE_SHARED_FILE(Stories260KBin());
  auto model = LoadModel(Stories260KBin());  // finds tok512.bin next to it
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectStories260KShape(model->config);
  EXPECT_EQ(model->config.context_length, 512);  // header seq_len
  EXPECT_TRUE(model->config.tied_output);        // positive vocab_size in the header
  EXPECT_EQ(model->config.name, "stories260K");
  EXPECT_EQ(model->weights.output.data, model->weights.token_embedding.data);
  EXPECT_EQ(model->tokenizer.tokens.size(), 512u);
  EXPECT_EQ(model->tokenizer.bos_id, 1);
}

// PROVENANCE: all 48 GGUF tensors are byte-identical to the matching .bin sections.
TEST(ModelLoaderTest, Llama2cAndGgufTensorsAreIdentical) {
  TEXTGEN_REQUIRE_SHARED_FILE(Stories260KBin());
  TEXTGEN_REQUIRE_SHARED_FILE(Stories260KGguf());
  auto bin = LoadModel(Stories260KBin());
  auto gguf = LoadModel(Stories260KGguf());
  ASSERT_TRUE(bin.ok()) << bin.status();
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  int compared = 0;
  const auto expect_same = [&](const TensorView& a, const TensorView& b, const std::string& what) {
    ASSERT_EQ(a.rows, b.rows) << what;
    ASSERT_EQ(a.cols, b.cols) << what;
    const std::vector<float> fa = Floats(a), fb = Floats(b);
    EXPECT_EQ(std::memcmp(fa.data(), fb.data(), fa.size() * sizeof(float)), 0) << what;
    ++compared;
  };
  const ModelWeights& a = bin->weights;
  const ModelWeights& b = gguf->weights;
  expect_same(a.token_embedding, b.token_embedding, "token_embd");
  expect_same(a.output, b.output, "output");  // tied in .bin, explicit copy in GGUF
  expect_same(a.output_norm, b.output_norm, "output_norm");
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const LayerWeights& x = a.layers[l];
    const LayerWeights& y = b.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    expect_same(x.attn_norm, y.attn_norm, p + "attn_norm");
    expect_same(x.wq, y.wq, p + "attn_q");
    expect_same(x.wk, y.wk, p + "attn_k");
    expect_same(x.wv, y.wv, p + "attn_v");
    expect_same(x.wo, y.wo, p + "attn_output");
    expect_same(x.ffn_norm, y.ffn_norm, p + "ffn_norm");
    expect_same(x.w_gate, y.w_gate, p + "ffn_gate");
    expect_same(x.w_up, y.w_up, p + "ffn_up");
    expect_same(x.w_down, y.w_down, p + "ffn_down");
  }
  EXPECT_EQ(compared, 48);
  // The GGUF vocabulary matches tok512.bin (after the reader's <s>/</s> normalisation).
  EXPECT_EQ(bin->tokenizer.tokens, gguf->tokenizer.tokens);
  EXPECT_EQ(bin->tokenizer.scores, gguf->tokenizer.scores);
}

TEST(ModelLoaderTest, MissingFileIsNotFound) {
  auto model = LoadModel(TestTempPath("does_not_exist.gguf"));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(model.status().message(), HasSubstr("does_not_exist.gguf"));
}

TEST(ModelLoaderTest, EmptyFileIsRejected) {
  const std::string path = TestTempPath("empty.gguf");
  WriteFile(path, "");
  auto model = LoadModel(path);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("empty"));
}

TEST(ModelLoaderTest, DirectoryIsRejected) {
  auto model = LoadModel(test_support::TestTempDir());
  EXPECT_FALSE(model.ok());
}

TEST(ModelLoaderTest, UnknownFormatNamesBothFormats) {
  const std::string path = TestTempPath("text.bin");
  WriteFile(path, "hello, this is not a model file at all........");
  auto model = LoadModel(path);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("neither a GGUF file"));
  EXPECT_THAT(model.status().message(), HasSubstr("llama2.c"));
}

TEST(ModelLoaderTest, Llama2cVersionedExportIsUnimplemented) {
  const std::string path = TestTempPath("v2.bin");
  std::string bytes(256, '\0');
  const uint32_t magic = 0x616b3432, version = 2;
  std::memcpy(bytes.data(), &magic, 4);
  std::memcpy(bytes.data() + 4, &version, 4);
  WriteFile(path, bytes);
  auto model = LoadModel(path);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(model.status().message(), HasSubstr("version 2"));
}

// Kilobytes of `mapping` resident in this process, from /proc/self/smaps.
int64_t ResidentKb(const MappedFile& mapping) {
  std::ifstream smaps("/proc/self/smaps");
  const auto start = reinterpret_cast<uintptr_t>(mapping.data());
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2) {
      inside = begin == start;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::stoll(line.substr(4));
    }
  }
  return -1;
}

// The engine tells the mapping when it has copied a tensor: those pages leave the process,
// and reading them again still gives the file's bytes.
TEST(MappedFileTest, DoneReadingDropsResidentPagesAndKeepsTheBytes) {
  const std::string path = TestTempPath("done_reading.bin");
  std::vector<uint8_t> bytes(size_t{4} << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  auto mapping = MappedFile::Open(path);
  ASSERT_TRUE(mapping.ok()) << mapping.status();
  const MappedFile& file = **mapping;
  ASSERT_EQ(0, std::memcmp(file.data(), bytes.data(), bytes.size()));  // all pages touched
  const int64_t before = ResidentKb(file);
  ASSERT_GE(before, 4000) << "smaps did not list the mapping as resident";
  // Not page-aligned at either end: only the pages wholly inside go.
  file.DoneReading(file.data() + 100, (size_t{3} << 20) - 200);
  // (Neighbouring pages may go too: the kernel maps file pages in 2 MiB units where it can
  // and unmaps a whole unit it is asked to split; they fault back in when read.)
  EXPECT_LE(ResidentKb(file), before - 3000);
  file.DoneReading(file.data() - 4096, 8192);  // outside the mapping: ignored
  EXPECT_EQ(0, std::memcmp(file.data(), bytes.data(), bytes.size()));
}

}  // namespace
}  // namespace textgen::model
