#include "model/weights.h"

#include "model/format/block_formats.h"

namespace textgen::model {

const char* DTypeName(DType dtype) { return FormatOf(dtype).name; }

void ToFloat(const TensorView& tensor, float* out) {
  DequantizeToFloat(tensor.dtype, static_cast<const uint8_t*>(tensor.data), tensor.elements(), out);
}

}  // namespace textgen::model
