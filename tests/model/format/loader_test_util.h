#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/format/weights.h"
#include "tests/testing/shared_files.h"
#include "tests/testing/temp_files.h"

namespace textgen::model::testing {

using ::textgen::test_support::SharedDir;

inline std::string Stories260KDir() { return SharedDir() + "/models/stories260K"; }
inline std::string Stories260KGguf() { return Stories260KDir() + "/stories260K.gguf"; }
inline std::string Stories260KBin() { return Stories260KDir() + "/stories260K.bin"; }
inline std::string LlamaTokenizerBin() {
  return SharedDir() + "/models/llama2-tokenizer/tokenizer.bin";
}

using ::textgen::test_support::TestTempPath;

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline std::vector<float> Floats(const TensorView& t) {
  std::vector<float> out(static_cast<size_t>(t.elements()));
  ToFloat(t, out.data());
  return out;
}

// Byte position just after the length-prefixed string `s` in a serialized GGUF (e.g. a tensor
// name: n_dims, dims, type and offset follow), or std::string::npos.
inline size_t PosAfterString(const std::string& file, const std::string& s) {
  std::string needle(8, '\0');
  const uint64_t length = s.size();
  std::memcpy(needle.data(), &length, 8);
  needle += s;
  const size_t pos = file.find(needle);
  return pos == std::string::npos ? pos : pos + needle.size();
}

template <typename T>
void Poke(std::string& file, size_t pos, T value) {
  std::memcpy(file.data() + pos, &value, sizeof(T));
}

inline std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace textgen::model::testing
