// ToFloat and the writer's encoders against IEEE / ggml values derived by hand.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "model/format/float16.h"
#include "model/format/gguf_writer.h"
#include "model/format/weights.h"

namespace textgen::model {
namespace {

std::vector<float> Decode(DType dtype, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(n);
  ToFloat(TensorView{dtype, 1, n, bytes.data()}, out.data());
  return out;
}

std::vector<uint8_t> Halves(const std::vector<uint16_t>& bits) {
  std::vector<uint8_t> bytes(bits.size() * 2);
  std::memcpy(bytes.data(), bits.data(), bytes.size());
  return bytes;
}

TEST(LoaderToFloatTest, F16KnownBitPatterns) {
  const std::vector<uint16_t> bits = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x0400,
                                      0x3555, 0x3800, 0x8000, 0x7C00, 0xFC00, 0x7E00};
  const std::vector<float> f = Decode(DType::kF16, Halves(bits), bits.size());
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(f[2], 65504.0f);                         // largest finite half
  EXPECT_EQ(f[3], std::ldexp(1.0f, -24));            // smallest subnormal
  EXPECT_EQ(f[4], 1023.0f * std::ldexp(1.0f, -24));  // largest subnormal
  EXPECT_EQ(f[5], std::ldexp(1.0f, -14));            // smallest normal
  EXPECT_EQ(f[6], 0.333251953125f);                  // 1/3 rounded to half
  EXPECT_EQ(f[7], 0.5f);
  EXPECT_EQ(f[8], 0.0f);
  EXPECT_TRUE(std::signbit(f[8]));
  EXPECT_EQ(f[9], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[10], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f[11]));
}

TEST(LoaderToFloatTest, Bf16KnownBitPatterns) {
  const std::vector<uint16_t> bits = {0x3F80, 0xC000, 0x7F7F, 0x3EAB, 0x0001, 0xFF80};
  const std::vector<float> f = Decode(DType::kBF16, Halves(bits), bits.size());
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(f[2], 3.3895313892515355e38f);  // largest finite bf16
  EXPECT_EQ(f[3], 0.333984375f);
  EXPECT_EQ(f[4], std::ldexp(1.0f, -133));  // smallest subnormal
  EXPECT_EQ(f[5], -std::numeric_limits<float>::infinity());
}

TEST(LoaderToFloatTest, Q8_0BlocksWithKnownScales) {
  // Block 0: d = 0x3800 (0.5), q_j = j - 16. Block 1: d = 0x2E66 (0.0999755859375), q = 127, -128.
  std::vector<uint8_t> bytes(68);
  const uint16_t d0 = 0x3800, d1 = 0x2E66;
  std::memcpy(bytes.data(), &d0, 2);
  for (int j = 0; j < 32; ++j) bytes[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  std::memcpy(bytes.data() + 34, &d1, 2);
  for (int j = 0; j < 32; ++j) bytes[36 + j] = static_cast<uint8_t>(j % 2 == 0 ? 127 : -128);
  const std::vector<float> f = Decode(DType::kQ8_0, bytes, 64);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(f[j], 0.5f * (j - 16)) << j;
  EXPECT_EQ(f[32], 12.6968994140625f);  // 1638/16384 * 127
  EXPECT_EQ(f[33], -12.796875f);        // 1638/16384 * -128
}

TEST(LoaderToFloatTest, F32IsCopied) {
  const std::vector<float> values = {1.5f, -0.25f, 3e38f};
  std::vector<uint8_t> bytes(12);
  std::memcpy(bytes.data(), values.data(), 12);
  EXPECT_EQ(Decode(DType::kF32, bytes, 3), values);
}

TEST(LoaderToFloatTest, HalfEncodingRoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);  // halfway past the max rounds to inf
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie -> even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie -> even
  EXPECT_EQ(FloatToHalf(0.01f), 0x211F);
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
}

TEST(LoaderToFloatTest, Q8_0EncodingMatchesGgmlScheme) {
  // max |x| = 1.27 -> d = 0.01 (stored as half 0x211F), q = round(x / d).
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = (j - 16) * 0.05f;
  x[31] = 1.27f;
  auto bytes = EncodeTensor(DType::kQ8_0, x, 32);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_EQ(bytes->size(), 34u);
  uint16_t d;
  std::memcpy(&d, bytes->data(), 2);
  EXPECT_EQ(d, 0x211F);
  EXPECT_EQ(static_cast<int8_t>((*bytes)[2 + 0]), -80);  // -0.8 / 0.01
  EXPECT_EQ(static_cast<int8_t>((*bytes)[2 + 20]), 20);  // 0.2 / 0.01
  EXPECT_EQ(static_cast<int8_t>((*bytes)[2 + 31]), 127);
  EXPECT_FALSE(EncodeTensor(DType::kQ8_0, x, 16).ok());  // rows must be whole blocks
}

}  // namespace
}  // namespace textgen::model
