// Every optimized op against its naive twin in model/kernels/reference.cc.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "model/format/float16.h"
#include "model/kernels/activations.h"
#include "model/kernels/attention.h"
#include "model/kernels/fast_math.h"
#include "model/kernels/norms.h"
#include "model/kernels/onednn_matmul.h"
#include "model/kernels/reference.h"
#include "model/kernels/rope.h"
#include "model/kernels/skinny_matmul.h"

namespace textgen::model::ops {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float atol,
                float rtol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], atol + rtol * std::fabs(want[i])) << "at index " << i;
  }
}

// ---- Linear (oneDNN matmul) ----

struct LinearCase {
  int m, n, k;
  bool bias, gelu, bf16;
};

class LinearTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearTest, MatchesReference) {
  const LinearCase c = GetParam();
  if (c.bf16 && !CpuHasBf16()) GTEST_SKIP() << "CPU lacks AVX512-BF16";
  auto ctx = OnednnContext::Create(/*threads=*/0, c.bf16, /*max_rows=*/64, /*max_cols=*/c.k);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  const auto w = Random(static_cast<size_t>(c.n) * c.k, 1, 0.1f);
  const auto b = Random(c.n, 2);
  const auto x = Random(static_cast<size_t>(c.m) * c.k, 3);
  auto linear = Linear::Create(**ctx, "test", w.data(), c.bias ? b.data() : nullptr, c.n, c.k,
                               c.gelu ? LinearActivation::kGeluTanh : LinearActivation::kNone,
                               /*max_rows=*/64);
  ASSERT_TRUE(linear.ok()) << linear.status();
  std::vector<float> got(static_cast<size_t>(c.m) * c.n), want(got.size());
  ASSERT_TRUE((*linear)->Run(x.data(), c.m, got.data()).ok());
  reference::Matmul(x.data(), w.data(), c.bias ? b.data() : nullptr, c.m, c.n, c.k, c.gelu,
                    want.data());
  // bf16 rounds weights and inputs to 8 mantissa bits: ~0.4% per product.
  ExpectNear(got, want, c.bf16 ? 3e-2f : 1e-4f, c.bf16 ? 2e-2f : 1e-4f);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearTest,
                         ::testing::Values(LinearCase{1, 96, 64, false, false, false},
                                           LinearCase{5, 172, 64, false, false, false},
                                           LinearCase{17, 64, 172, true, false, false},
                                           LinearCase{33, 256, 96, true, true, false},
                                           LinearCase{3, 96, 64, false, false, true},
                                           LinearCase{20, 128, 256, true, true, true}));

// A row's output must not depend on how many other rows share the matmul (fixed-M brgemm).
TEST(LinearInvarianceTest, RowIsBitwiseIdenticalForEveryM) {
  for (bool bf16 : {false, true}) {
    if (bf16 && !CpuHasBf16()) continue;
    auto ctx = OnednnContext::Create(0, bf16, 64, 256);
    ASSERT_TRUE(ctx.ok());
    const int n = 200, k = 256;
    const auto w = Random(n * k, 4, 0.1f);
    const auto b = Random(n, 5);
    const auto x = Random(64 * k, 6);
    auto linear =
        Linear::Create(**ctx, "inv", w.data(), b.data(), n, k, LinearActivation::kGeluTanh, 64);
    ASSERT_TRUE(linear.ok());
    // Row 0 of x alone, then as row `at` of a batch of m rows.
    std::vector<float> alone(n);
    ASSERT_TRUE((*linear)->Run(x.data(), 1, alone.data()).ok());
    for (int m : {2, 7, 8, 16, 31, 64}) {
      std::vector<float> batch_x(x.begin(), x.begin() + static_cast<ptrdiff_t>(m) * k);
      const int at = m / 2;
      std::copy(x.begin(), x.begin() + k, batch_x.begin() + static_cast<ptrdiff_t>(at) * k);
      std::vector<float> out(static_cast<size_t>(m) * n);
      ASSERT_TRUE((*linear)->Run(batch_x.data(), m, out.data()).ok());
      EXPECT_EQ(
          std::memcmp(out.data() + static_cast<ptrdiff_t>(at) * n, alone.data(), sizeof(float) * n),
          0)
          << "bf16=" << bf16 << " m=" << m;
    }
  }
}

// Invariance rests on every M using the same fixed-M brgemm kernel with the weight layout
// chosen at load; a silent fallback (gemm:jit, ref) for some M would break it.
TEST(LinearInvarianceTest, EveryMUsesTheSameKernelFamily) {
  for (bool bf16 : {false, true}) {
    if (bf16 && !CpuHasBf16()) continue;
    auto ctx = OnednnContext::Create(0, bf16, 512, 768);
    ASSERT_TRUE(ctx.ok());
    (*ctx)->set_skinny_max_rows(0);  // this test is about oneDNN's kernels alone
    const auto w = Random(2048 * 768, 17, 0.05f);
    auto linear =
        Linear::Create(**ctx, "ffn", w.data(), nullptr, 2048, 768, LinearActivation::kNone, 512);
    ASSERT_TRUE(linear.ok());
    auto first = (*linear)->ImplementationName(1);
    ASSERT_TRUE(first.ok());
    if (first->rfind("brg", 0) != 0) GTEST_SKIP() << "no brgemm matmul on this CPU: " << *first;
    for (int m : {2, 13, 64, 200, 512}) {
      EXPECT_EQ(*(*linear)->ImplementationName(m), *first) << "m=" << m << " bf16=" << bf16;
    }
  }
}

// The weight-streaming kernel serves few-row calls only because it reproduces oneDNN's
// brgemm bit for bit (same K chunks, same order); then rows stay batch-invariant while a
// batch's M decides which of the two runs. Shapes cover one chunk, several chunks, a ragged
// last chunk, odd K (bf16 pairs with zero), N not a multiple of the 64-column panel, bias
// and GELU.
struct SkinnyCase {
  int n, k;
  bool bias, gelu;
};

class SkinnyMatmulTest : public ::testing::TestWithParam<SkinnyCase> {};

TEST_P(SkinnyMatmulTest, MatchesOnednnBitwiseForEveryRowCount) {
  const SkinnyCase c = GetParam();
  for (bool bf16 : {false, true}) {
    if (!CpuSupportsSkinnyMatmul(bf16) || (bf16 && !CpuHasBf16())) {
      GTEST_SKIP() << "CPU lacks AVX-512" << (bf16 ? "-BF16" : "") << " for the skinny kernel";
    }
    const int max_rows = 40;
    auto skinny_ctx = OnednnContext::Create(0, bf16, max_rows, c.k);
    auto onednn_ctx = OnednnContext::Create(0, bf16, max_rows, c.k);
    ASSERT_TRUE(skinny_ctx.ok() && onednn_ctx.ok());
    (*skinny_ctx)->set_skinny_max_rows(max_rows);
    (*onednn_ctx)->set_skinny_max_rows(0);
    const auto w = Random(static_cast<size_t>(c.n) * c.k, 21, 0.1f);
    const auto b = Random(c.n, 22);
    const auto act = c.gelu ? LinearActivation::kGeluTanh : LinearActivation::kNone;
    auto skinny = Linear::Create(**skinny_ctx, "s", w.data(), c.bias ? b.data() : nullptr, c.n, c.k,
                                 act, max_rows);
    auto onednn = Linear::Create(**onednn_ctx, "o", w.data(), c.bias ? b.data() : nullptr, c.n, c.k,
                                 act, max_rows);
    ASSERT_TRUE(skinny.ok() && onednn.ok());
    // A failure here means this oneDNN sums differently and decode silently lost its kernel.
    ASSERT_TRUE((*skinny)->skinny_enabled()) << "n=" << c.n << " k=" << c.k << " bf16=" << bf16;
    EXPECT_FALSE((*onednn)->skinny_enabled());
    EXPECT_EQ(*(*skinny)->ImplementationName(1), bf16 ? "skinny:avx512_bf16" : "skinny:avx512");
    for (int m : {1, 2, 3, 5, 6, 7, 12, 13, 40}) {
      const auto x = Random(static_cast<size_t>(m) * c.k, 23 + m, 2.0f);
      std::vector<float> got(static_cast<size_t>(m) * c.n), want(got.size());
      ASSERT_TRUE((*skinny)->Run(x.data(), m, got.data()).ok());
      ASSERT_TRUE((*onednn)->Run(x.data(), m, want.data()).ok());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
            << "bf16=" << bf16 << " m=" << m << " row " << i / c.n << " col " << i % c.n << ": "
            << got[i] << " vs " << want[i];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SkinnyMatmulTest,
    ::testing::Values(SkinnyCase{200, 37, true, false}, SkinnyCase{64, 512, false, false},
                      SkinnyCase{100, 768, false, true}, SkinnyCase{1000, 513, true, false},
                      SkinnyCase{70, 1024, false, false}, SkinnyCase{130, 1025, true, false},
                      SkinnyCase{96, 2048, true, true}, SkinnyCase{64, 3001, false, false}));

// The loader stages bf16 weights for a bf16 context (half the memory): the packed weights,
// and so every result, must be those packed from the f32 weights.
TEST(LinearTest, Bf16StagedWeightsPackLikeF32Weights) {
  if (!CpuHasBf16()) GTEST_SKIP() << "CPU lacks AVX512-BF16";
  const int n = 200, k = 320, rows = 24;
  auto ctx = OnednnContext::Create(0, /*bf16=*/true, rows, k);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  auto w = Random(static_cast<size_t>(n) * k, 31, 0.5f);
  w[5] = 1.0f + 0x1.0p-8f;  // exactly halfway between two bf16 values: rounds to even
  w[6] = 1.0f + 0x3.0p-8f;
  std::vector<uint16_t> w_bf16(w.size());
  ConvertToBf16(w.data(), static_cast<int64_t>(w.size()), w_bf16.data());
  const auto b = Random(n, 32);
  auto from_f32 =
      Linear::Create(**ctx, "f32", w.data(), b.data(), n, k, LinearActivation::kNone, rows);
  auto from_bf16 =
      Linear::Create(**ctx, "bf16", w_bf16.data(), b.data(), n, k, LinearActivation::kNone, rows);
  ASSERT_TRUE(from_f32.ok() && from_bf16.ok());
  const auto x = Random(static_cast<size_t>(rows) * k, 33);
  for (int m : {1, 3, rows}) {  // the weight-streaming kernel and oneDNN
    std::vector<float> a(static_cast<size_t>(m) * n), c(a.size());
    ASSERT_TRUE((*from_f32)->Run(x.data(), m, a.data()).ok());
    ASSERT_TRUE((*from_bf16)->Run(x.data(), m, c.data()).ok());
    ASSERT_EQ(0, std::memcmp(a.data(), c.data(), a.size() * sizeof(float))) << "m=" << m;
  }
}

// The LM head is packed from a source of row blocks (no whole staged copy): same packed
// weights, so the same results, as packing it at once; 3000 rows of 4096 are three blocks,
// the last one partial and not a multiple of the layout's N block.
TEST(LinearTest, PackingFromRowBlocksEqualsPackingAtOnce) {
  const int n = 3000, k = 4096, rows = 4;
  const auto w = Random(static_cast<size_t>(n) * k, 41, 0.5f);
  const auto x = Random(static_cast<size_t>(rows) * k, 42);
  for (bool bf16 : {false, true}) {
    if (bf16 && !CpuHasBf16()) continue;
    auto ctx = OnednnContext::Create(0, bf16, rows, k);
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    auto whole =
        Linear::Create(**ctx, "whole", w.data(), nullptr, n, k, LinearActivation::kNone, rows);
    int calls = 0, covered = 0;
    const Linear::WeightRows source = [&](int begin, int count, void* out) {
      EXPECT_EQ(begin, covered);
      covered += count;
      ++calls;
      const float* from = w.data() + static_cast<size_t>(begin) * k;
      if (bf16) {
        ConvertToBf16(from, int64_t{count} * k, static_cast<uint16_t*>(out));
      } else {
        std::memcpy(out, from, sizeof(float) * count * k);
      }
    };
    auto blocks =
        Linear::Create(**ctx, "blocks", source, bf16, nullptr, n, k, LinearActivation::kNone, rows);
    ASSERT_TRUE(whole.ok() && blocks.ok()) << blocks.status();
    EXPECT_EQ(covered, n);
    EXPECT_GE(calls, 3) << "bf16=" << bf16;
    for (int m : {1, rows}) {
      std::vector<float> a(static_cast<size_t>(m) * n), b(a.size());
      ASSERT_TRUE((*whole)->Run(x.data(), m, a.data()).ok());
      ASSERT_TRUE((*blocks)->Run(x.data(), m, b.data()).ok());
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
          << "m=" << m << " bf16=" << bf16;
    }
  }
}

TEST(LinearTest, RejectsRowsOutOfRange) {
  auto ctx = OnednnContext::Create(0, false, 8, 16);
  ASSERT_TRUE(ctx.ok());
  const auto w = Random(16 * 16, 7);
  auto linear =
      Linear::Create(**ctx, "small", w.data(), nullptr, 16, 16, LinearActivation::kNone, 8);
  ASSERT_TRUE(linear.ok());
  std::vector<float> x(9 * 16), y(9 * 16);
  EXPECT_EQ((*linear)->Run(x.data(), 9, y.data()).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*linear)->Run(x.data(), 0, y.data()).code(), absl::StatusCode::kInvalidArgument);
}

// ---- Norms, activations ----

TEST(NormsTest, RmsNormMatchesReference) {
  const int rows = 5, dim = 96;
  const auto x = Random(rows * dim, 8, 3.0f);
  const auto w = Random(dim, 9);
  std::vector<float> got(rows * dim), want(rows * dim);
  RmsNorm(x.data(), rows, dim, w.data(), 1e-5f, got.data());
  reference::RmsNorm(x.data(), rows, dim, w.data(), 1e-5f, want.data());
  ExpectNear(got, want, 1e-5f, 1e-5f);
}

TEST(NormsTest, LayerNormMatchesReference) {
  const int rows = 4, dim = 80;
  auto x = Random(rows * dim, 10, 2.0f);
  for (float& v : x) v += 5.0f;  // a large mean exercises the centering
  const auto w = Random(dim, 11), b = Random(dim, 12);
  std::vector<float> got(rows * dim), want(rows * dim);
  LayerNorm(x.data(), rows, dim, w.data(), b.data(), 1e-5f, got.data());
  reference::LayerNorm(x.data(), rows, dim, w.data(), b.data(), 1e-5f, want.data());
  ExpectNear(got, want, 1e-4f, 1e-4f);
}

TEST(ActivationsTest, SiluMulMatchesReference) {
  const int rows = 3, hidden = 50;
  const auto gu = Random(rows * 2 * hidden, 13, 4.0f);
  std::vector<float> got(rows * hidden), want(rows * hidden);
  SiluMul(gu.data(), rows, hidden, got.data());
  for (int r = 0; r < rows; ++r) {
    reference::SiluMul(gu.data() + r * 2 * hidden, gu.data() + r * 2 * hidden + hidden, hidden,
                       want.data() + r * hidden);
  }
  ExpectNear(got, want, 1e-6f, 1e-6f);
}

TEST(ActivationsTest, GeluTanhMatchesReferenceAndKnownValues) {
  const auto x = Random(100, 14, 5.0f);
  std::vector<float> got(100);
  GeluTanh(x.data(), 100, got.data());
  for (int i = 0; i < 100; ++i) EXPECT_NEAR(got[i], reference::GeluTanh(x[i]), 1e-6f);
  // torch.nn.functional.gelu(torch.tensor([1.0, -1.0]), approximate="tanh")
  EXPECT_NEAR(reference::GeluTanh(1.0f), 0.8411920071f, 1e-6f);
  EXPECT_NEAR(reference::GeluTanh(-1.0f), -0.1588080013f, 1e-6f);
  // The vectorized, parallel path (several 4096-element chunks and a ragged end), far tails
  // included: large negative inputs give ~0, never NaN.
  const int64_t n = (int64_t{1} << 16) + 7;
  const auto wide = Random(static_cast<int>(n), 15, 20.0f);
  std::vector<float> wide_got(n);
  GeluTanh(wide.data(), n, wide_got.data());
  for (int64_t i = 0; i < n; ++i) {
    const float want = reference::GeluTanh(wide[i]);
    ASSERT_NEAR(wide_got[i], want, 1e-6f + 2e-6f * std::fabs(want)) << wide[i];
  }
  const float extremes[] = {-1e4f, -88.0f, -10.0f, 0.0f, 1e-30f, 10.0f, 1e4f};
  float extreme_got[7];
  GeluTanh(extremes, 7, extreme_got);
  for (int i = 0; i < 7; ++i) {
    EXPECT_NEAR(extreme_got[i], reference::GeluTanh(extremes[i]),
                1e-6f * (1 + std::fabs(extremes[i])));
  }
}

TEST(ActivationsTest, GeluTanhMulMatchesReference) {
  const int rows = 5, hidden = 1000;
  const auto gu = Random(rows * 2 * hidden, 16, 6.0f);
  std::vector<float> got(rows * hidden);
  GeluTanhMul(gu.data(), rows, hidden, got.data());
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < hidden; ++i) {
      const float want =
          reference::GeluTanh(gu[r * 2 * hidden + i]) * gu[r * 2 * hidden + hidden + i];
      ASSERT_NEAR(got[r * hidden + i], want, 1e-6f + 2e-6f * std::fabs(want));
    }
  }
}

// gpt-oss's clamped SwiGLU against the formula in double: gates and ups of std 10, so both
// clamps (gate above 7, up outside [-7, 7]) are crossed, and one value worked by hand.
TEST(ActivationsTest, SwiGluOaiMulClampsAsTheReferenceModel) {
  const int rows = 4, hidden = 700;
  const auto gu = Random(rows * 2 * hidden, 17, 10.0f);
  std::vector<float> got(rows * hidden);
  SwiGluOaiMul(gu.data(), rows, hidden, got.data());
  int clamped_gates = 0, clamped_ups = 0;
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < hidden; ++i) {
      const double gate = gu[r * 2 * hidden + i], up = gu[r * 2 * hidden + hidden + i];
      clamped_gates += gate > 7 ? 1 : 0;
      clamped_ups += std::fabs(up) > 7 ? 1 : 0;
      const double g = std::min(gate, 7.0), u = std::clamp(up, -7.0, 7.0);
      const double want = g / (1 + std::exp(-1.702 * g)) * (u + 1);
      ASSERT_NEAR(got[r * hidden + i], want, 1e-5 + 2e-6 * std::fabs(want)) << gate << " " << up;
    }
  }
  EXPECT_GT(clamped_gates, 100);
  EXPECT_GT(clamped_ups, 200);
  // gate 2, up -9: 2 * sigmoid(3.404) * (clamp(-9, -7, 7) + 1) = 1.93566 * -6 = -11.61395
  const float pair[] = {2.0f, -9.0f};
  float one;
  SwiGluOaiMul(pair, 1, 1, &one);
  EXPECT_NEAR(one, -11.61395f, 1e-4f);
}

TEST(ActivationsTest, ConvertToBf16RoundsToNearestEven) {
  const float in[] = {1.0f, 1.00390625f /* halfway: 1 + 2^-8 */, 1.01171875f /* 1 + 3*2^-8 */,
                      -2.5f, NAN};
  uint16_t out[5];
  ConvertToBf16(in, 5, out);
  EXPECT_EQ(out[0], 0x3f80);
  EXPECT_EQ(out[1], 0x3f80);  // tie goes to even
  EXPECT_EQ(out[2], 0x3f82);  // tie goes to even (up)
  EXPECT_EQ(out[3], 0xc020);
  EXPECT_EQ(out[4] & 0x7f80, 0x7f80);
  EXPECT_NE(out[4] & 0x7f, 0);
}

TEST(FastMathTest, FastExpWithinFewUlpOfLibm) {
  for (float x = -80.0f; x <= 80.0f; x += 0.01237f) {
    const double want = std::exp(static_cast<double>(x));
    ASSERT_NEAR(FastExp(x), want, 4e-7 * want) << "x=" << x;
  }
  EXPECT_EQ(FastExp(0.0f), 1.0f);
  EXPECT_GE(FastExp(-1000.0f), 0.0f);  // clamped, no NaN/garbage for softmax's -inf gaps
  EXPECT_LT(FastExp(-1000.0f), 1e-37f);
}

// ---- RoPE ----

struct RopeCase {
  RopeLayout layout;
  int head_dim, rope_dim;
};

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesReference) {
  const RopeCase c = GetParam();
  const int rows = 4, heads = 3, context = 64;
  const Rope rope(context, c.head_dim, c.rope_dim, 10000.0f, c.layout);
  const int positions[rows] = {0, 1, 17, 63};
  auto x = Random(rows * heads * c.head_dim, 15);
  auto want = x;
  rope.Apply(x.data(), rows, heads * c.head_dim, positions, heads);
  for (int r = 0; r < rows; ++r) {
    reference::Rope(want.data() + r * heads * c.head_dim, heads, c.head_dim, c.rope_dim, 10000.0f,
                    c.layout, positions[r]);
  }
  ExpectNear(x, want, 1e-5f, 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(Layouts, RopeTest,
                         ::testing::Values(RopeCase{RopeLayout::kAdjacentPairs, 8, 8},
                                           RopeCase{RopeLayout::kNeox, 8, 8},
                                           RopeCase{RopeLayout::kAdjacentPairs, 16, 8},
                                           RopeCase{RopeLayout::kNeox, 16, 4}));

TEST(RopeReferenceTest, AdjacentPairsRotateByPositionTimesFrequency) {
  // head_dim 4: pair (0,1) turns by pos * 1, pair (2,3) by pos * 10000^-0.5.
  float x[4] = {1, 0, 1, 0};
  reference::Rope(x, 1, 4, 4, 10000.0f, RopeLayout::kAdjacentPairs, 2);
  EXPECT_NEAR(x[0], std::cos(2.0f), 1e-6f);
  EXPECT_NEAR(x[1], std::sin(2.0f), 1e-6f);
  EXPECT_NEAR(x[2], std::cos(0.02f), 1e-6f);
  EXPECT_NEAR(x[3], std::sin(0.02f), 1e-6f);
}

// ---- Paged attention ----

// Head sizes: 8 takes the portable kernel, multiples of 16 the AVX-512 one (where present);
// block sizes and lengths leave partial groups of four keys and partial blocks.
struct AttentionCase {
  int head_dim, block_tokens;
  bool f16;  // half-precision cache: the reference gets K/V rounded the same way
  AttentionScoring scoring = {};  // scale, softcap, sliding window
};

// A block holding K then V of n_kv heads of hd for bt tokens.
PagedKvLayout BlockLayout(int n_kv, int hd, int bt, bool f16) {
  return PagedKvLayout{.block_tokens = bt,
                       .n_kv_heads = n_kv,
                       .head_dim = hd,
                       .k_offset = 0,
                       .v_offset = n_kv * bt * hd,
                       .head_stride = bt * hd,
                       .f16 = f16};
}

// A sink logit per head (6 heads): below, near and far above typical scores.
constexpr float kSinks[6] = {-2.0f, 0.0f, 0.5f, 4.0f, -30.0f, 1.5f};

class PagedAttentionTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(PagedAttentionTest, MatchesReferenceWithGqaAcrossBlocks) {
  const int n_heads = 6, n_kv = 2, hd = GetParam().head_dim, bt = GetParam().block_tokens;
  const bool f16 = GetParam().f16;
  const int kv_dim = n_kv * hd, q_dim = n_heads * hd;
  // Two sequences: one with 6 cached tokens + a 5-token chunk, one decoding at position 38.
  struct Seq {
    int start, n;
  } seqs[2] = {{6, 5}, {38, 1}};
  const int rows = 6;
  const auto q = Random(rows * q_dim, 16);
  const PagedKvLayout layout = BlockLayout(n_kv, hd, bt, f16);
  const int block_floats = 2 * n_kv * bt * hd;
  std::vector<std::vector<float>> storage;
  std::vector<std::vector<std::byte*>> tables(2);
  std::vector<AttentionChunk> chunks;
  std::vector<std::vector<float>> full_k(2), full_v(2);
  int first_row = 0;
  for (int s = 0; s < 2; ++s) {
    const int total = seqs[s].start + seqs[s].n;
    full_k[s] = Random(total * kv_dim, 100 + s);
    full_v[s] = Random(total * kv_dim, 200 + s);
    for (int b = 0; b < (total + bt - 1) / bt; ++b) {
      storage.emplace_back(block_floats, NAN);  // unwritten slots must never be read
    }
    for (size_t b = storage.size() - (total + bt - 1) / bt; b < storage.size(); ++b) {
      tables[s].push_back(reinterpret_cast<std::byte*>(storage[b].data()));
    }
    // Cached prefix written directly, the chunk's own K/V through StoreKv below.
    AttentionChunk prefix{tables[s].data(), 0, seqs[s].start, 0};
    StoreKv({&prefix, 1}, layout, full_k[s].data(), full_v[s].data(), kv_dim);
    chunks.push_back({tables[s].data(), seqs[s].start, seqs[s].n, first_row});
    first_row += seqs[s].n;
  }
  // Rows of the batch hold the new tokens' K/V.
  std::vector<float> new_k(rows * kv_dim), new_v(rows * kv_dim);
  for (int s = 0, r = 0; s < 2; ++s) {
    for (int t = 0; t < seqs[s].n; ++t, ++r) {
      std::memcpy(&new_k[r * kv_dim], &full_k[s][(seqs[s].start + t) * kv_dim], kv_dim * 4);
      std::memcpy(&new_v[r * kv_dim], &full_v[s][(seqs[s].start + t) * kv_dim], kv_dim * 4);
    }
  }
  StoreKv(chunks, layout, new_k.data(), new_v.data(), kv_dim);
  std::vector<float> scores(64 * 64), got(rows * q_dim);
  const AttentionScoring scoring = GetParam().scoring;
  PagedAttention(chunks, layout, n_heads, q.data(), q_dim, got.data(), q_dim, scores.data(), 64,
                 scoring);

  std::vector<float> want(rows * q_dim);
  for (int s = 0; s < 2; ++s) {
    if (f16) {
      for (float& x : full_k[s]) x = HalfToFloat(FloatToHalf(x));
      for (float& x : full_v[s]) x = HalfToFloat(FloatToHalf(x));
    }
    reference::Attention(q.data() + chunks[s].first_row * q_dim, full_k[s].data(), full_v[s].data(),
                         seqs[s].n, seqs[s].start, n_heads, n_kv, hd,
                         want.data() + chunks[s].first_row * q_dim, scoring.scale, scoring.softcap,
                         scoring.window, scoring.sinks);
  }
  ExpectNear(got, want, 1e-5f, 1e-5f);
}

// Rows of a prefill score a KV head's query heads together (up to 4 per pass, 7 as 4 + 3) and
// add their values in slices of 16 dimensions; a lone decode row takes one head at a time.
// Each head's result must be bitwise the same, for every slicing of the head (16 to 256, odd
// slice counts), with and without a window that starts inside a block.
TEST(PagedAttentionGroupTest, HeadsScoredTogetherEqualOneHeadAtATimeBitwise) {
  const auto check = [](int hd, int group, int window, bool f16) {
    const int n_kv = 1, n_heads = group * n_kv, bt = 16, total = 40;
    const int kv_dim = n_kv * hd, q_dim = n_heads * hd;
    const PagedKvLayout layout = BlockLayout(n_kv, hd, bt, f16);
    std::vector<std::vector<float>> storage((total + bt - 1) / bt,
                                            std::vector<float>(2 * n_kv * bt * hd));
    std::vector<std::byte*> table;
    for (std::vector<float>& block : storage) {
      table.push_back(reinterpret_cast<std::byte*>(block.data()));
    }
    const auto k = Random(total * kv_dim, 31), v = Random(total * kv_dim, 32);
    const auto q = Random(total * q_dim, 33);
    const AttentionChunk all{table.data(), 0, total, 0};
    StoreKv({&all, 1}, layout, k.data(), v.data(), kv_dim);
    std::vector<float> scores(AttentionScratchFloats(8, total));
    std::vector<float> batched(total * q_dim);
    const AttentionScoring scoring{.window = window};
    PagedAttention({&all, 1}, layout, n_heads, q.data(), q_dim, batched.data(), q_dim,
                   scores.data(), total, scoring);
    for (int t = 0; t < total; ++t) {
      const AttentionChunk one{table.data(), t, 1, 0};
      std::vector<float> alone(q_dim);
      PagedAttention({&one, 1}, layout, n_heads, q.data() + t * q_dim, q_dim, alone.data(), q_dim,
                     scores.data(), total, scoring);
      ASSERT_EQ(std::memcmp(alone.data(), batched.data() + t * q_dim, sizeof(float) * q_dim), 0)
          << "head_dim " << hd << " group " << group << " window " << window << " f16 " << f16
          << " row " << t;
    }
  };
  for (const int hd : {16, 48, 64, 80, 128, 256}) {
    for (const int group : {2, 4, 7}) {
      for (const int window : {0, 13}) {
        for (const bool f16 : {false, true}) check(hd, group, window, f16);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    HeadSizes, PagedAttentionTest,
    ::testing::Values(
        AttentionCase{8, 4, false}, AttentionCase{16, 4, false}, AttentionCase{48, 16, false},
        AttentionCase{64, 16, false}, AttentionCase{128, 16, false}, AttentionCase{80, 16, false},
        AttentionCase{256, 16, false}, AttentionCase{8, 4, true}, AttentionCase{64, 16, true},
        AttentionCase{80, 16, true}, AttentionCase{256, 16, true},
        // Gemma's scoring: sliding windows that start inside
        // a block and inside the chunk, softcaps, a scale.
        AttentionCase{64, 16, false, {0.3f, 3.0f, 5}}, AttentionCase{128, 16, true, {0, 0, 20}},
        AttentionCase{8, 4, false, {0, 2.0f, 3}}, AttentionCase{256, 16, false, {0, 2.0f, 7}},
        AttentionCase{48, 16, true, {0.25f, 1.5f, 0}}, AttentionCase{192, 16, true, {0, 0, 9}},
        // gpt-oss: a sink logit per head, with and without a sliding window.
        AttentionCase{64, 16, false, {0, 0, 0, true, kSinks}},
        AttentionCase{64, 16, true, {0, 0, 5, true, kSinks}},
        AttentionCase{8, 4, false, {0, 0, 3, true, kSinks}}));

}  // namespace
}  // namespace textgen::model::ops
