// The engine on small random-weight llama (GQA, NeoX RoPE over part of the head, untied
// output) and gpt2 (LayerNorm, biases, learned positions, GELU, tied output) models,
// against a naive forward pass built from model/kernels/reference.cc; plus input validation.
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/kernels/reference.h"
#include "model/runtime/engine.h"
#include "tests/testing/reserve_and_forward.h"

namespace textgen::model {
namespace {

using ::textgen::testing::ReserveAndForward;

using ::testing::HasSubstr;
namespace ref = ops::reference;

// Weights in owned buffers (the engine must keep them alive, as it does a file mapping).
struct FloatBuffers : WeightStorage {
  std::vector<std::vector<float>> tensors;
};

struct Synthetic {
  LoadedModel model;
  std::shared_ptr<FloatBuffers> buffers;
};

Synthetic MakeModel(const ModelConfig& config, uint32_t seed) {
  Synthetic s;
  s.buffers = std::make_shared<FloatBuffers>();
  std::mt19937 rng(seed);
  auto tensor = [&](int64_t rows, int64_t cols, float scale, float offset = 0.0f) {
    std::uniform_real_distribution<float> dist(offset - scale, offset + scale);
    auto& buf = s.buffers->tensors.emplace_back(rows * cols);
    for (float& x : buf) x = dist(rng);
    return TensorView{DType::kF32, rows, cols, buf.data()};
  };
  const ModelConfig& c = config;
  const bool gpt2 = c.architecture == Architecture::kGpt2;
  const int q_dim = c.n_heads * c.head_dim;
  ModelWeights& w = s.model.weights;
  w.token_embedding = tensor(c.vocab_size, c.dim, 1.0f);
  if (gpt2) w.position_embedding = tensor(c.context_length, c.dim, 0.5f);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights lw;
    lw.attn_norm = tensor(1, c.dim, 0.2f, 1.0f);
    lw.ffn_norm = tensor(1, c.dim, 0.2f, 1.0f);
    lw.wq = tensor(q_dim, c.dim, 0.3f);
    lw.wk = tensor(c.kv_dim(), c.dim, 0.3f);
    lw.wv = tensor(c.kv_dim(), c.dim, 0.3f);
    lw.wo = tensor(c.dim, q_dim, 0.2f);
    lw.w_up = tensor(c.hidden_dim, c.dim, 0.2f);
    lw.w_down = tensor(c.dim, c.hidden_dim, 0.2f);
    if (gpt2) {
      lw.attn_norm_bias = tensor(1, c.dim, 0.1f);
      lw.ffn_norm_bias = tensor(1, c.dim, 0.1f);
      lw.bq = tensor(1, q_dim, 0.1f);
      lw.bk = tensor(1, c.kv_dim(), 0.1f);
      lw.bv = tensor(1, c.kv_dim(), 0.1f);
      lw.bo = tensor(1, c.dim, 0.1f);
      lw.b_up = tensor(1, c.hidden_dim, 0.1f);
      lw.b_down = tensor(1, c.dim, 0.1f);
    } else {
      lw.w_gate = tensor(c.hidden_dim, c.dim, 0.2f);
    }
    w.layers.push_back(lw);
  }
  w.output_norm = tensor(1, c.dim, 0.2f, 1.0f);
  if (gpt2) w.output_norm_bias = tensor(1, c.dim, 0.1f);
  w.output = c.tied_output ? w.token_embedding : tensor(c.vocab_size, c.dim, 0.3f);
  s.model.config = config;
  s.model.storage = s.buffers;
  return s;
}

ModelConfig LlamaConfig() {
  ModelConfig c;
  c.architecture = Architecture::kLlama;
  c.dim = 48;
  c.hidden_dim = 80;
  c.n_layers = 2;
  c.n_heads = 6;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.vocab_size = 70;
  c.context_length = 40;
  c.rope_dim = 4;
  c.rope_layout = RopeLayout::kNeox;
  c.tied_output = false;
  return c;
}

ModelConfig Gpt2Config() {
  ModelConfig c;
  c.architecture = Architecture::kGpt2;
  c.dim = 32;
  c.hidden_dim = 128;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 4;
  c.head_dim = 8;
  c.vocab_size = 50;
  c.context_length = 24;
  c.tied_output = true;
  return c;
}

// Naive forward of one whole sequence: logits of every position [T, vocab].
std::vector<float> ReferenceForward(const LoadedModel& m, const std::vector<int>& tokens) {
  const ModelConfig& c = m.config;
  auto f = [](const TensorView& t) { return static_cast<const float*>(t.data); };
  const bool gpt2 = c.architecture == Architecture::kGpt2;
  const int T = static_cast<int>(tokens.size()), q_dim = c.n_heads * c.head_dim;
  const int kv = c.kv_dim();
  std::vector<float> x(T * c.dim), xn(T * c.dim), q(T * q_dim), k(T * kv), v(T * kv),
      att(T * q_dim), o(T * c.dim), g(T * c.hidden_dim), u(T * c.hidden_dim), h(T * c.hidden_dim);
  auto norm = [&](const TensorView& w, const TensorView& b) {
    if (gpt2) {
      ref::LayerNorm(x.data(), T, c.dim, f(w), f(b), c.norm_eps, xn.data());
    } else {
      ref::RmsNorm(x.data(), T, c.dim, f(w), c.norm_eps, xn.data());
    }
  };
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < c.dim; ++i) {
      x[t * c.dim + i] = f(m.weights.token_embedding)[tokens[t] * c.dim + i] +
                         (gpt2 ? f(m.weights.position_embedding)[t * c.dim + i] : 0.0f);
    }
  }
  for (const LayerWeights& lw : m.weights.layers) {
    norm(lw.attn_norm, lw.attn_norm_bias);
    ref::Matmul(xn.data(), f(lw.wq), f(lw.bq), T, q_dim, c.dim, false, q.data());
    ref::Matmul(xn.data(), f(lw.wk), f(lw.bk), T, kv, c.dim, false, k.data());
    ref::Matmul(xn.data(), f(lw.wv), f(lw.bv), T, kv, c.dim, false, v.data());
    if (!gpt2) {
      for (int t = 0; t < T; ++t) {
        ref::Rope(&q[t * q_dim], c.n_heads, c.head_dim, c.rope_dim, c.rope_theta, c.rope_layout, t);
        ref::Rope(&k[t * kv], c.n_kv_heads, c.head_dim, c.rope_dim, c.rope_theta, c.rope_layout, t);
      }
    }
    ref::Attention(q.data(), k.data(), v.data(), T, 0, c.n_heads, c.n_kv_heads, c.head_dim,
                   att.data());
    ref::Matmul(att.data(), f(lw.wo), f(lw.bo), T, c.dim, q_dim, false, o.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    norm(lw.ffn_norm, lw.ffn_norm_bias);
    if (gpt2) {
      ref::Matmul(xn.data(), f(lw.w_up), f(lw.b_up), T, c.hidden_dim, c.dim, true, h.data());
    } else {
      ref::Matmul(xn.data(), f(lw.w_gate), nullptr, T, c.hidden_dim, c.dim, false, g.data());
      ref::Matmul(xn.data(), f(lw.w_up), nullptr, T, c.hidden_dim, c.dim, false, u.data());
      ref::SiluMul(g.data(), u.data(), T * c.hidden_dim, h.data());
    }
    ref::Matmul(h.data(), f(lw.w_down), f(lw.b_down), T, c.dim, c.hidden_dim, false, o.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
  }
  norm(m.weights.output_norm, m.weights.output_norm_bias);
  std::vector<float> logits(T * c.vocab_size);
  ref::Matmul(xn.data(), f(m.weights.output), nullptr, T, c.vocab_size, c.dim, false,
              logits.data());
  return logits;
}

std::unique_ptr<Engine> MakeEngine(const LoadedModel& model, int max_tokens = 32,
                                   int64_t kv_bytes = int64_t{16} << 20) {
  EngineOptions options;
  options.max_batch_tokens = max_tokens;
  options.kv_cache_bytes = kv_bytes;
  auto engine = Engine::Create(model, options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

class SyntheticTest : public ::testing::TestWithParam<bool /*gpt2*/> {};

TEST_P(SyntheticTest, MatchesReferenceForwardTokenByTokenAndChunked) {
  const ModelConfig config = GetParam() ? Gpt2Config() : LlamaConfig();
  Synthetic s = MakeModel(config, 42);
  std::vector<int> tokens;
  std::mt19937 rng(3);
  for (int i = 0; i < 20; ++i) tokens.push_back(static_cast<int>(rng() % config.vocab_size));
  const std::vector<float> want = ReferenceForward(s.model, tokens);
  const int vocab = config.vocab_size;

  auto engine = MakeEngine(s.model);
  ASSERT_NE(engine, nullptr);
  // Token by token: every position's logits.
  const SequenceId a = engine->kv_cache().NewSequence();
  for (size_t t = 0; t < tokens.size(); ++t) {
    SequenceChunk chunk{a, {&tokens[t], 1}, true};
    auto r = ReserveAndForward(*engine, {&chunk, 1});
    ASSERT_TRUE(r.ok()) << r.status();
    for (int i = 0; i < vocab; ++i) {
      ASSERT_NEAR(r->Row(0)[i], want[t * vocab + i], 1e-3f + 1e-3f * std::fabs(want[t * vocab + i]))
          << "position " << t << " logit " << i;
    }
  }
  // Chunks of 7, 6, 7 (crossing a KV block boundary), last rows compared.
  const SequenceId b = engine->kv_cache().NewSequence();
  size_t begin = 0;
  for (size_t n : {7u, 6u, 7u}) {
    SequenceChunk chunk{b, std::span<const int>(tokens).subspan(begin, n), true};
    auto r = ReserveAndForward(*engine, {&chunk, 1});
    ASSERT_TRUE(r.ok()) << r.status();
    const size_t last = begin + n - 1;
    for (int i = 0; i < vocab; ++i) {
      ASSERT_NEAR(r->Row(0)[i], want[last * vocab + i],
                  1e-3f + 1e-3f * std::fabs(want[last * vocab + i]));
    }
    begin += n;
  }
  EXPECT_EQ(engine->kv_cache().Length(b), 20);
}

// Embeddings read the final hidden states: the output-normed rows the LM head multiplies (so
// hidden · outputᵀ is the reference's logits), bitwise the same whether the prompt went in
// whole, in chunks or next to another sequence.
TEST_P(SyntheticTest, HiddenStatesAreTheOutputNormedRowsHoweverTheyAreBatched) {
  const ModelConfig config = GetParam() ? Gpt2Config() : LlamaConfig();
  Synthetic s = MakeModel(config, 42);
  std::vector<int> tokens;
  std::mt19937 rng(5);
  for (int i = 0; i < 20; ++i) tokens.push_back(static_cast<int>(rng() % config.vocab_size));
  const std::vector<float> want = ReferenceForward(s.model, tokens);
  auto engine = MakeEngine(s.model);
  ASSERT_NE(engine, nullptr);
  const int dim = config.dim;
  const int vocab = config.vocab_size;

  // Whole: every row, no logits.
  const SequenceId a = engine->kv_cache().NewSequence();
  SequenceChunk whole{a, tokens, false, HiddenRows::kAll};
  auto r = ReserveAndForward(*engine, {&whole, 1});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows, 0);
  ASSERT_EQ(r->hidden_rows, 20);
  ASSERT_EQ(r->dim, dim);
  const std::vector<float> rows(r->hidden, r->hidden + 20 * dim);
  const float* output = static_cast<const float*>(s.model.weights.output.data);
  for (int t = 0; t < 20; ++t) {
    for (int v = 0; v < vocab; ++v) {
      double logit = 0;
      for (int i = 0; i < dim; ++i) logit += double{rows[t * dim + i]} * output[v * dim + i];
      ASSERT_NEAR(logit, want[t * vocab + v], 1e-3 + 1e-3 * std::fabs(want[t * vocab + v]))
          << "position " << t;
    }
  }
  // Chunks of 7, 6, 7 next to another sequence's decode, the last row each time.
  const SequenceId b = engine->kv_cache().NewSequence();
  const SequenceId other = engine->kv_cache().NewSequence();
  const std::vector<int> other_token = {3};
  size_t begin = 0;
  for (size_t n : {7u, 6u, 7u}) {
    std::vector<SequenceChunk> batch = {
        {other, other_token, true, HiddenRows::kNone},
        {b, std::span<const int>(tokens).subspan(begin, n), false, HiddenRows::kLast}};
    auto chunked = ReserveAndForward(*engine, batch);
    ASSERT_TRUE(chunked.ok()) << chunked.status();
    ASSERT_EQ(chunked->hidden_rows, 1);
    const size_t last = begin + n - 1;
    for (int i = 0; i < dim; ++i) {
      ASSERT_EQ(chunked->HiddenRow(0)[i], rows[last * dim + i]) << "position " << last;
    }
    begin += n;
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, SyntheticTest, ::testing::Values(false, true),
                         [](const auto& param_info) {
                           return param_info.param ? "Gpt2" : "Llama";
                         });

// ============================================================================
// Validation: a failed Forward advances no sequence
// ============================================================================

class ValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s_ = MakeModel(LlamaConfig(), 1);
    engine_ = MakeEngine(s_.model, /*max_tokens=*/8);
    ASSERT_NE(engine_, nullptr);
    a_ = engine_->kv_cache().NewSequence();
    SequenceChunk chunk{a_, tokens_, true};
    ASSERT_TRUE(ReserveAndForward(*engine_, {&chunk, 1}).ok());
  }
  absl::Status Run(std::vector<SequenceChunk> batch) {
    absl::Status s = ReserveAndForward(*engine_, batch).status();
    EXPECT_EQ(engine_->kv_cache().Length(a_), 3) << "a failed batch advanced a sequence";
    return s;
  }

  Synthetic s_;
  std::unique_ptr<Engine> engine_;
  SequenceId a_ = -1;
  std::vector<int> tokens_ = {1, 2, 3};
};

TEST_F(ValidationTest, RejectsBadTokenIds) {
  const std::vector<int> bad = {5, 70};
  const std::vector<int> ok = {4};
  absl::Status s = Run({{a_, ok, true}, {engine_->kv_cache().NewSequence(), bad, true}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("token id 70 outside [0, 70)"));
  const std::vector<int> negative = {-1};
  EXPECT_EQ(Run({{a_, negative, true}}).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ValidationTest, RejectsTooManyTokensUnknownAndDuplicateIds) {
  const std::vector<int> nine(9, 1), one = {1}, none;
  EXPECT_THAT(Run({{a_, nine, true}}).message(), HasSubstr("more than max_batch_tokens 8"));
  EXPECT_EQ(Run({{a_, one, true}, {12345, one, true}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run({{a_, one, true}, {a_, one, true}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run({{a_, none, true}}).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ValidationTest, PastContextIsOutOfRange) {
  // Context 40: fill a second sequence to 38 (8 + 8 + 8 + 8 + 6), then ask for 3 more.
  const SequenceId b = engine_->kv_cache().NewSequence();
  const std::vector<int> eight(8, 2), six(6, 2), three(3, 2);
  for (int i = 0; i < 4; ++i) {
    SequenceChunk chunk{b, eight, false};
    ASSERT_TRUE(ReserveAndForward(*engine_, {&chunk, 1}).ok());
  }
  SequenceChunk chunk{b, six, false};
  ASSERT_TRUE(ReserveAndForward(*engine_, {&chunk, 1}).ok());
  absl::Status s = Run({{a_, three, true}, {b, three, true}});
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(s.message(), HasSubstr("context of 40"));
  EXPECT_EQ(engine_->kv_cache().Length(b), 38);
}

TEST_F(ValidationTest, AChunkWithoutReservedRoomFailsTheBatchAndTakesNoMemory) {
  Synthetic s = MakeModel(LlamaConfig(), 2);
  // One block (16 tokens) costs 16 * 2 layers * 2 * 16 floats * 4 bytes = 4096 bytes.
  auto engine = MakeEngine(s.model, 32, /*kv_bytes=*/8 * 4096);
  ASSERT_NE(engine, nullptr);
  KvCache& cache = engine->kv_cache();
  EXPECT_EQ(cache.BytesForTokens(1), 4096);
  const SequenceId a = cache.NewSequence(), b = cache.NewSequence();
  const std::vector<int> t10(10, 3), t20(20, 3);
  SequenceChunk first{a, t10, true};
  ASSERT_TRUE(ReserveAndForward(*engine, {&first, 1}).ok());
  // a has room for 5 more in its block; b reserved nothing: the batch fails as a whole and
  // the engine takes no memory of its own (admission is the scheduler's).
  const std::vector<int> t5(5, 3);
  std::vector<SequenceChunk> batch = {{a, t5, true}, {b, t20, true}};
  auto r = engine->Forward(batch);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(),
              HasSubstr("has room for 0 tokens and the chunk would reach 20"));
  EXPECT_EQ(cache.Length(a), 10);
  EXPECT_EQ(cache.Length(b), 0);
  EXPECT_EQ(cache.bytes_in_use(), 4096);
}

TEST_F(ValidationTest, LogitsOnlyForChunksThatAskAndEmptyBatch) {
  const std::vector<int> one = {7}, two = {8, 9};
  const SequenceId b = engine_->kv_cache().NewSequence();
  std::vector<SequenceChunk> batch = {{a_, one, false}, {b, two, true}};
  auto r = ReserveAndForward(*engine_, batch);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rows, 1);
  EXPECT_EQ(r->vocab_size, 70);
  EXPECT_EQ(engine_->kv_cache().Length(a_), 4);
  EXPECT_EQ(engine_->kv_cache().Length(b), 2);
  auto empty = ReserveAndForward(*engine_, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->rows, 0);
}

TEST(EngineCreateTest, RejectsBadOptionsAndShapes) {
  Synthetic s = MakeModel(LlamaConfig(), 5);
  EngineOptions options;
  options.max_batch_tokens = 0;
  EXPECT_EQ(Engine::Create(s.model, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.max_batch_tokens = 8;
  s.model.weights.layers[1].wk.rows = 8;  // wrong shape
  auto e = Engine::Create(s.model, options);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("blk.1.attn_k"));
}

}  // namespace
}  // namespace textgen::model
