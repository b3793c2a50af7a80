// textgen-dequantize: writes every tensor of a GGUF file as raw little-endian f32, converted by
// textgen's own dequantizers, so tests can compare them with other implementations.
// Usage: textgen-dequantize FILE.gguf OUT_DIR   (writes OUT_DIR/<tensor name>.f32)

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "model/format/gguf_reader.h"
#include "model/format/mapped_file.h"
#include "model/format/weights.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s FILE.gguf OUT_DIR\n", argv[0]);
    return 2;
  }
  absl::StatusOr<std::unique_ptr<textgen::model::MappedFile>> mapped =
      textgen::model::MappedFile::Open(argv[1]);
  if (!mapped.ok()) {
    std::fprintf(stderr, "%s\n", mapped.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<textgen::model::GgufFile> file = textgen::model::ParseGguf((*mapped)->bytes());
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n", file.status().ToString().c_str());
    return 1;
  }
  for (const textgen::model::GgufTensorInfo& t : file->tensors) {
    const textgen::model::TensorView view{t.dtype, t.elements / t.dims[0], t.dims[0],
                                          file->TensorData(t)};
    std::vector<float> values(static_cast<size_t>(t.elements));
    textgen::model::ToFloat(view, values.data());
    std::ofstream out(std::string(argv[2]) + "/" + t.name + ".f32", std::ios::binary);
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(float)));
    if (!out) {
      std::fprintf(stderr, "cannot write %s/%s.f32\n", argv[2], t.name.c_str());
      return 1;
    }
  }
  return 0;
}
