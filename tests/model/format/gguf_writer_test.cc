// GgufWriter -> ParseGguf round trips of every metadata type and tensor type.
#include "model/format/gguf_writer.h"

#include <cstring>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/format/gguf_reader.h"
#include "tests/model/format/loader_test_util.h"

namespace textgen::model {
namespace {

using namespace ::textgen::model::testing;

std::vector<GgufKv> AllMetadataTypes() {
  return {
      {"t.u8", GgufValue::Uint8(255)},
      {"t.i8", GgufValue::Int8(-128)},
      {"t.u16", GgufValue::Uint16(65535)},
      {"t.i16", GgufValue::Int16(-32768)},
      {"t.u32", GgufValue::Uint32(4294967295u)},
      {"t.i32", GgufValue::Int32(std::numeric_limits<int32_t>::min())},
      {"t.u64", GgufValue::Uint64(std::numeric_limits<uint64_t>::max())},
      {"t.i64", GgufValue::Int64(std::numeric_limits<int64_t>::min())},
      {"t.f32", GgufValue::Float32(-1.5e-7f)},
      {"t.f64", GgufValue::Float64(3.141592653589793)},
      {"t.bool_true", GgufValue::Bool(true)},
      {"t.bool_false", GgufValue::Bool(false)},
      {"t.string", GgufValue::String(std::string("nul\0inside \xE2\x96\x81", 14))},
      {"t.empty_string", GgufValue::String("")},
      {"t.strings", GgufValue::StringArray({"a", "", "\xC4\xA0the"})},
      {"t.floats", GgufValue::Float32Array({0.5f, -2.0f})},
      {"t.ints", GgufValue::Int32Array({-1, 0, 7})},
      {"t.empty_array", GgufValue::Array(GgufType::kUint64, {})},
      {"t.nested", GgufValue::Array(GgufType::kArray,
                                    {GgufValue::Array(GgufType::kInt16, {GgufValue::Int16(-3)}),
                                     GgufValue::Array(GgufType::kInt16, {})})},
      {"t.bools",
       GgufValue::Array(GgufType::kBool, {GgufValue::Bool(true), GgufValue::Bool(false)})},
  };
}

void ExpectSameValue(const GgufValue& a, const GgufValue& b, const std::string& key) {
  ASSERT_EQ(a.type, b.type) << key;
  if (a.type == GgufType::kArray) {
    ASSERT_EQ(a.element_type, b.element_type) << key;
    ASSERT_EQ(a.array().size(), b.array().size()) << key;
    for (size_t i = 0; i < a.array().size(); ++i) {
      ExpectSameValue(a.array()[i], b.array()[i], key + "[" + std::to_string(i) + "]");
    }
    return;
  }
  EXPECT_TRUE(a.data == b.data) << key;
}

TEST(GgufWriterTest, RoundTripsEveryMetadataType) {
  GgufWriter writer;
  const std::vector<GgufKv> kvs = AllMetadataTypes();
  for (const GgufKv& kv : kvs) writer.AddMetadata(kv.key, kv.value);
  const std::string bytes = writer.Serialize();
  auto file = ParseGguf(Bytes(bytes));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->version, 3u);
  ASSERT_EQ(file->metadata.size(), kvs.size() + 1);  // + general.alignment
  EXPECT_EQ(file->metadata[0].key, "general.alignment");
  for (size_t i = 0; i < kvs.size(); ++i) {
    EXPECT_EQ(file->metadata[i + 1].key, kvs[i].key);
    ExpectSameValue(kvs[i].value, file->metadata[i + 1].value, kvs[i].key);
  }
  EXPECT_EQ(*file->GetInt("t.i16", -40000, 0), -32768);
  EXPECT_EQ(*file->GetString("t.string"), std::string("nul\0inside \xE2\x96\x81", 14));
  EXPECT_EQ(*file->GetBool("t.bool_true"), true);
  EXPECT_FLOAT_EQ(static_cast<float>(*file->GetFloat("t.f32")), -1.5e-7f);
  // uint64 max does not fit an int64 request: a range error naming the key.
  EXPECT_THAT(file->GetInt("t.u64", 0, 100).status().message(), ::testing::HasSubstr("t.u64"));
}

TEST(GgufWriterTest, RoundTripsEveryTensorTypeAndHonoursAlignment) {
  GgufWriter writer(/*alignment=*/64);
  std::vector<float> values(2 * 3 * 64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.01f * static_cast<float>(i % 97) - 0.4f;
  struct Case {
    std::string name;
    DType dtype;
    std::vector<int64_t> dims;
  };
  const std::vector<Case> cases = {{"f32_1d", DType::kF32, {384}},
                                   {"f16_2d", DType::kF16, {64, 6}},
                                   {"bf16_3d", DType::kBF16, {64, 3, 2}},
                                   {"q8_0_4d", DType::kQ8_0, {64, 3, 1, 2}}};
  std::vector<std::vector<uint8_t>> encoded;
  for (const Case& c : cases) {
    auto data = EncodeTensor(c.dtype, values, c.dims[0]);
    ASSERT_TRUE(data.ok());
    encoded.push_back(*data);
    ASSERT_TRUE(writer.AddTensor(c.name, c.dtype, c.dims, *data).ok());
  }
  const std::string bytes = writer.Serialize();
  auto file = ParseGguf(Bytes(bytes));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->alignment, 64u);
  EXPECT_EQ(file->data_offset % 64, 0u);
  ASSERT_EQ(file->tensors.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const GgufTensorInfo& t = file->tensors[i];
    EXPECT_EQ(t.name, cases[i].name);
    EXPECT_EQ(t.dtype, cases[i].dtype);
    EXPECT_EQ(t.n_dims, static_cast<int>(cases[i].dims.size()));
    for (size_t d = 0; d < cases[i].dims.size(); ++d) EXPECT_EQ(t.dims[d], cases[i].dims[d]);
    EXPECT_EQ(t.elements, 384);
    EXPECT_EQ(t.file_offset % 64, 0u) << t.name;
    ASSERT_EQ(t.nbytes, encoded[i].size());
    EXPECT_EQ(std::memcmp(file->TensorData(t), encoded[i].data(), t.nbytes), 0) << t.name;
    // Decoded values are the originals up to each type's precision.
    std::vector<float> decoded(384);
    ToFloat(TensorView{t.dtype, 1, 384, file->TensorData(t)}, decoded.data());
    const float tolerance = t.dtype == DType::kF32    ? 0.0f
                            : t.dtype == DType::kF16  ? 5e-4f
                            : t.dtype == DType::kBF16 ? 4e-3f
                                                      : 4e-3f;  // Q8_0: d/2 with d <= 0.56/127
    for (int j = 0; j < 384; ++j) EXPECT_NEAR(decoded[j], values[j], tolerance) << t.name << j;
  }
}

TEST(GgufWriterTest, RejectsInconsistentTensors) {
  GgufWriter writer;
  EXPECT_FALSE(writer.AddTensor("x", DType::kF32, {4}, std::vector<uint8_t>(12)).ok());
  EXPECT_FALSE(writer.AddTensor("x", DType::kQ8_0, {16}, std::vector<uint8_t>(17)).ok());
  EXPECT_FALSE(writer.AddTensor("x", DType::kF32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4)).ok());
}

}  // namespace
}  // namespace textgen::model
