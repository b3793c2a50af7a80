// The quantized kernels (model/kernels/quant/): the packed layout against ggml's dequantizers,
// the VNNI matmul against a double-precision reference of the same quantized math, activation
// quantization error bounds, and bitwise batch / thread invariance.
#include "model/kernels/quant/quant_matmul.h"

#include <omp.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/format/block_formats.h"
#include "model/format/float16.h"
#include "model/kernels/quant/packed_quant_matrix.h"
#include "model/kernels/quant/quantized_activations.h"
#include "model/kernels/quant/quantized_linear.h"
#include "tests/tools/random_quant_blocks.h"

namespace textgen::model::ops {
namespace {

constexpr DType kTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                            DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kMXFP4};

std::vector<float> RandomRows(int rows, int k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows) * k);
  for (float& v : x) v = dist(rng);
  // An outlier per row, as real activations have: it sets the block's scale.
  for (int r = 0; r < rows; ++r) x[static_cast<size_t>(r) * k + (r * 37) % k] = 9.0f;
  return x;
}

struct Matrix {
  std::vector<uint8_t> bytes;
  TensorView view;
};

Matrix MakeMatrix(DType dtype, int n, int k, uint32_t seed) {
  Matrix m;
  m.bytes = testing::RandomQuantBlocks(dtype, n, k, seed);
  m.view = TensorView{dtype, n, k, m.bytes.data()};
  return m;
}

class QuantKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!CpuSupportsQuantMatmul()) GTEST_SKIP() << "this CPU lacks AVX512-VNNI";
  }
  HugePageArena arena_;
};

TEST_P(QuantKernelTest, PackedLayoutHoldsTheFilesValues) {
  const DType dtype = GetParam();
  const int k = FormatOf(dtype).block_elements == 256 ? 512 : 96;
  const int n = 37;  // a partial last panel
  const Matrix m = MakeMatrix(dtype, n, k, 7);
  std::vector<float> want(static_cast<size_t>(n) * k);
  ToFloat(m.view, want.data());
  absl::StatusOr<PackedQuantMatrix> packed = PackQuantMatrix(m.view, arena_);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(packed->panels, 3);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < k; ++c) {
      const float got = PackedWeightAt(*packed, r, c);
      ASSERT_EQ(std::memcmp(&got, &want[static_cast<size_t>(r) * k + c], 4), 0)
          << DTypeName(dtype) << " row " << r << " col " << c << ": " << got << " vs "
          << want[static_cast<size_t>(r) * k + c];
    }
  }
}

TEST_P(QuantKernelTest, MatmulMatchesTheQuantizedMathInDoublePrecision) {
  const DType dtype = GetParam();
  const int block = ActivationBlockFor(dtype);
  const int k = block == 256 ? 768 : 160;
  const int n = 53;
  const Matrix m = MakeMatrix(dtype, n, k, 11);
  std::vector<float> w(static_cast<size_t>(n) * k);
  ToFloat(m.view, w.data());
  absl::StatusOr<PackedQuantMatrix> packed = PackQuantMatrix(m.view, arena_);
  ASSERT_TRUE(packed.ok()) << packed.status();
  // 7 rows: one panel per pass, packed codes; 40: panel pairs, codes unpacked per pass.
  for (const int rows : {7, 40}) {
    const std::vector<float> x = RandomRows(rows, k, 3);
    QuantizedActivations xq;
    xq.Quantize(x.data(), rows, k, block);
    std::vector<float> y(static_cast<size_t>(rows) * n, -1.0f);
    QuantMatmul(*packed, xq, y.data(), n);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < n; ++c) {
        double want = 0.0, magnitude = 0.0;
        for (int i = 0; i < k; ++i) {
          const double a = static_cast<double>(xq.scales(r)[i / block]) * xq.codes(r)[i];
          want += a * w[static_cast<size_t>(c) * k + i];
          magnitude += std::fabs(a * w[static_cast<size_t>(c) * k + i]);
        }
        // f32 rounding of a handful of block products: far below the quantization error.
        ASSERT_NEAR(y[static_cast<size_t>(r) * n + c], want, 1e-5 * magnitude + 1e-7)
            << DTypeName(dtype) << " rows " << rows << " row " << r << " col " << c;
      }
    }
  }
}

TEST_P(QuantKernelTest, RowsComeOutBitwiseTheSameInAnyBatchAndThreadCount) {
  const DType dtype = GetParam();
  const int block = ActivationBlockFor(dtype);
  const int k = block == 256 ? 1024 : 320;
  const int n = 200;
  // Panel pairs and (5/6-bit codes) unpacked codes from 41 rows, passes handed out dynamically
  // from 70; single rows use none of these.
  const Matrix m = MakeMatrix(dtype, n, k, 5);
  absl::StatusOr<PackedQuantMatrix> packed = PackQuantMatrix(m.view, arena_);
  ASSERT_TRUE(packed.ok()) << packed.status();
  const int threads = omp_get_max_threads();
  for (const int rows : {41, 70}) {
    const std::vector<float> x = RandomRows(rows, k, 9);
    QuantizedActivations xq;
    xq.Quantize(x.data(), rows, k, block);
    for (int t : {1, 2, 3}) {
      omp_set_num_threads(t);
      std::vector<float> batched(static_cast<size_t>(rows) * n);
      QuantMatmul(*packed, xq, batched.data(), n);
      for (int r = 0; r < rows; ++r) {
        QuantizedActivations one;
        one.Quantize(x.data() + static_cast<size_t>(r) * k, 1, k, block);
        std::vector<float> alone(n);
        QuantMatmul(*packed, one, alone.data(), n);
        ASSERT_EQ(std::memcmp(alone.data(), batched.data() + static_cast<size_t>(r) * n,
                              sizeof(float) * n),
                  0)
            << DTypeName(dtype) << " rows " << rows << " row " << r << " threads " << t;
      }
    }
  }
  omp_set_num_threads(threads);
}

// Under 64 rows each thread starts on its own run of passes and, done, takes the back half of
// what another has left: every column is written once, with the one-thread values, whatever
// the team, including a team smaller than the runs (a call from inside a parallel region,
// whose nested team is one thread: that thread takes the other run too).
TEST_P(QuantKernelTest, DecodeRunsCoverEveryPassOnceInAnyTeam) {
  const DType dtype = GetParam();
  const int block = ActivationBlockFor(dtype);
  const int k = block == 256 ? 512 : 320;
  const int n = 16 * 97 + 5;  // 98 panels, the last ragged
  const Matrix m = MakeMatrix(dtype, n, k, 11);
  absl::StatusOr<PackedQuantMatrix> packed = PackQuantMatrix(m.view, arena_);
  ASSERT_TRUE(packed.ok()) << packed.status();
  const int threads = omp_get_max_threads();
  for (const int rows : {1, 9, 41}) {
    const std::vector<float> x = RandomRows(rows, k, 12);
    QuantizedActivations xq;
    xq.Quantize(x.data(), rows, k, block);
    const auto run = [&] {
      std::vector<float> y(static_cast<size_t>(rows) * n, std::nanf(""));
      QuantMatmul(*packed, xq, y.data(), n);
      return y;
    };
    omp_set_num_threads(1);
    const std::vector<float> want = run();
    for (float v : want) ASSERT_FALSE(std::isnan(v)) << DTypeName(dtype) << " rows " << rows;
    for (int t : {2, 3, 5}) {
      omp_set_num_threads(t);
      const std::vector<float> got = run();
      ASSERT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * want.size()), 0)
          << DTypeName(dtype) << " rows " << rows << " threads " << t;
    }
    omp_set_num_threads(2);
    std::vector<float> nested[2];
#pragma omp parallel num_threads(2)
    nested[omp_get_thread_num()] = run();
    for (const std::vector<float>& got : nested) {
      ASSERT_EQ(got.size(), want.size()) << "a thread of the outer region did not run";
      ASSERT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * want.size()), 0)
          << DTypeName(dtype) << " rows " << rows << " from inside a parallel region";
    }
  }
  omp_set_num_threads(threads);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantKernelTest, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<DType>& type) {
                           return std::string(DTypeName(type.param));
                         });

TEST(QuantizedActivationsTest, CodesReconstructEachValueWithinHalfAStep) {
  if (!CpuSupportsQuantMatmul()) GTEST_SKIP() << "this CPU lacks AVX512-VNNI";
  for (int block : {32, 256}) {
    const int k = 512;
    const std::vector<float> x = RandomRows(3, k, 17);
    QuantizedActivations q;
    q.Quantize(x.data(), 3, k, block);
    for (int r = 0; r < 3; ++r) {
      for (int i = 0; i < k; ++i) {
        const float scale = q.scales(r)[i / block];
        const float value = x[static_cast<size_t>(r) * k + i];
        const int code = q.codes(r)[i];
        // Blocks of 32 keep their scale in f16, as llama.cpp's block_q8_0 (the codes come from
        // the f32 scale): up to 2^-11 of it off per unit of code, on top of half a step.
        const float rounding = block == 32 ? std::abs(code) * scale * (1.0f / 2048) : 0.0f;
        if (block == 32) {
          ASSERT_EQ(HalfToFloat(FloatToHalf(scale)), scale);
        }
        ASSERT_LE(std::fabs(scale * code - value), (0.5f * scale + rounding) * 1.0001f)
            << "block " << block << " row " << r << " i " << i;
      }
      for (int s = 0; s < k / 16; ++s) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += q.codes(r)[16 * s + i];
        ASSERT_EQ(q.sums16(r)[s], sum);
      }
      for (int p = 0; p < k / 64; ++p) {
        const int32_t packed = q.pair_sums(r)[p];
        EXPECT_EQ(static_cast<int16_t>(packed & 0xFFFF),
                  q.sums16(r)[4 * p] + q.sums16(r)[4 * p + 1]);
        EXPECT_EQ(static_cast<int16_t>(packed >> 16),
                  q.sums16(r)[4 * p + 2] + q.sums16(r)[4 * p + 3]);
      }
    }
  }
}

TEST(QuantizedActivationsTest, AZeroBlockHasZeroScaleAndCodes) {
  if (!CpuSupportsQuantMatmul()) GTEST_SKIP() << "this CPU lacks AVX512-VNNI";
  std::vector<float> x(64, 0.0f);
  QuantizedActivations q;
  q.Quantize(x.data(), 1, 64, 32);
  EXPECT_EQ(q.scales(0)[0], 0.0f);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(q.codes(0)[i], 0);
}

TEST(QuantizedLinearTest, MixedPartsFillAdjacentColumnsWithBias) {
  if (!CpuSupportsQuantMatmul()) GTEST_SKIP() << "this CPU lacks AVX512-VNNI";
  const int k = 512;
  const Matrix a = MakeMatrix(DType::kQ4_K, 40, k, 1);
  const Matrix b = MakeMatrix(DType::kQ6_K, 24, k, 2);
  const Matrix c = MakeMatrix(DType::kQ8_0, 8, k, 3);
  const TensorView* parts[] = {&a.view, &b.view, &c.view};
  ASSERT_TRUE(QuantizedLinear::Supports(parts));
  std::vector<float> bias(72);
  for (int i = 0; i < 72; ++i) bias[i] = 0.25f * i;
  HugePageArena arena;
  QuantScratch scratch;
  auto layer = QuantizedLinear::Create("test", parts, bias.data(), LinearActivation::kNone, 4,
                                       arena, scratch);
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_EQ((*layer)->n(), 72);
  EXPECT_EQ(*(*layer)->ImplementationName(1), "vnni:Q4_K+Q6_K+Q8_0");
  const std::vector<float> x = RandomRows(3, k, 4);
  std::vector<float> y(3 * 72);
  ASSERT_TRUE((*layer)->Run(x.data(), 3, y.data()).ok());
  HugePageArena arena2;
  for (const auto& [matrix, col0] : {std::pair{&a, 0}, std::pair{&b, 40}, std::pair{&c, 64}}) {
    absl::StatusOr<PackedQuantMatrix> packed = PackQuantMatrix(matrix->view, arena2);
    ASSERT_TRUE(packed.ok());
    QuantizedActivations xq;
    xq.Quantize(x.data(), 3, k, ActivationBlockFor(matrix->view.dtype));
    std::vector<float> part(3 * packed->n);
    QuantMatmul(*packed, xq, part.data(), packed->n);
    for (int r = 0; r < 3; ++r) {
      for (int j = 0; j < packed->n; ++j) {
        ASSERT_EQ(y[r * 72 + col0 + j], part[r * packed->n + j] + bias[col0 + j])
            << "row " << r << " col " << col0 + j;
      }
    }
  }
  EXPECT_EQ((*layer)->Run(x.data(), 5, y.data()).code(), absl::StatusCode::kInvalidArgument);
}

// A mixture's experts run together (one parallel region) and each gives bitwise what it gives
// alone: different types, row counts (one panel per pass, pairs, unpacked codes) and inputs.
TEST(QuantizedLinearTest, RunManyGivesEachLayerItsOwnRunBitwise) {
  if (!CpuSupportsQuantMatmul()) GTEST_SKIP() << "this CPU lacks AVX512-VNNI";
  const int k = 512;
  const DType types[] = {DType::kQ4_K, DType::kQ6_K, DType::kQ8_0, DType::kQ5_K};
  // Few rows: each thread takes a contiguous run of passes; many: passes handed out in turn.
  for (const std::array<int, 4> rows : {std::array{1, 9, 3, 20}, std::array{64, 70, 65, 100}}) {
    HugePageArena arena;
    QuantScratch shared;
    std::vector<Matrix> matrices;
    std::vector<std::unique_ptr<QuantizedLinear>> layers;
    for (int i = 0; i < 4; ++i) {
      matrices.push_back(MakeMatrix(types[i], 48 + 16 * i, k, 10 + i));
    }
    for (int i = 0; i < 4; ++i) {
      const TensorView* parts[] = {&matrices[i].view};
      auto layer = QuantizedLinear::Create("expert", parts, nullptr, LinearActivation::kNone, 128,
                                           arena, shared);
      ASSERT_TRUE(layer.ok()) << layer.status();
      layers.push_back(std::move(*layer));
    }
    std::vector<std::vector<float>> inputs, alone, together;
    std::vector<QuantizedLinear::Call> calls;
    for (int i = 0; i < 4; ++i) {
      inputs.push_back(RandomRows(rows[i], k, 20 + i));
      alone.emplace_back(static_cast<size_t>(rows[i]) * layers[i]->n());
      together.emplace_back(alone.back().size());
      ASSERT_TRUE(layers[i]->Run(inputs[i].data(), rows[i], alone[i].data()).ok());
    }
    for (int i = 0; i < 4; ++i) {
      calls.push_back({layers[i].get(), inputs[i].data(), rows[i], together[i].data()});
    }
    std::vector<QuantScratch> scratch(4);
    const int default_threads = omp_get_max_threads();
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      ASSERT_TRUE(QuantizedLinear::RunMany(calls, scratch).ok());
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(std::memcmp(alone[i].data(), together[i].data(), alone[i].size() * sizeof(float)),
                  0)
            << "layer " << i << " (" << DTypeName(types[i]) << ", " << rows[i] << " rows), "
            << threads << " threads";
      }
    }
    omp_set_num_threads(default_threads);
    EXPECT_EQ(QuantizedLinear::RunMany(calls, std::span(scratch).first(3)).code(),
              absl::StatusCode::kInternal);
  }
}

TEST(QuantizedLinearTest, RefusesTypesWithoutAKernel) {
  std::vector<uint8_t> bytes(static_cast<size_t>(BytesOf(DType::kQ2_K, 16 * 256)));
  const TensorView q2{DType::kQ2_K, 16, 256, bytes.data()};
  const TensorView* parts[] = {&q2};
  EXPECT_FALSE(QuantizedLinear::Supports(parts));
  HugePageArena arena;
  EXPECT_EQ(PackQuantMatrix(q2, arena).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace textgen::model::ops
