#include "model/format/weights.h"

#include "model/format/block_formats.h"

namespace textgen::model {

const char* DTypeName(DType dtype) { return FormatOf(dtype).name; }

void ToFloat(const TensorView& tensor, float* out) {
  DequantizeToFloat(tensor.dtype, static_cast<const uint8_t*>(tensor.data), tensor.elements(), out);
}

TensorView RowsOf(const TensorView& matrix, int64_t begin, int64_t count) {
  return TensorView{
      matrix.dtype, count, matrix.cols,
      static_cast<const uint8_t*>(matrix.data) + begin * BytesOf(matrix.dtype, matrix.cols)};
}

size_t ByteSize(const TensorView& tensor) {
  return static_cast<size_t>(BytesOf(tensor.dtype, tensor.elements()));
}

void WeightStorage::DoneReading(const void* /*data*/, size_t /*bytes*/) const {}

}  // namespace textgen::model
