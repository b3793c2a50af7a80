#include "model/kernels/quant/quantized_linear.h"

#include <set>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "model/kernels/activations.h"
#include "model/kernels/quant/quant_matmul.h"

namespace textgen::model::ops {

bool QuantizedLinear::Supports(std::span<const TensorView* const> parts) {
  if (parts.empty() || !CpuSupportsQuantMatmul()) return false;
  for (const TensorView* part : parts) {
    if (part->empty() || !IsPackableQuantType(part->dtype) || part->cols != parts[0]->cols ||
        part->cols % ActivationBlockFor(part->dtype) != 0) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::unique_ptr<QuantizedLinear>> QuantizedLinear::Create(
    const std::string& name, std::span<const TensorView* const> parts, const float* bias,
    LinearActivation act, int max_rows, HugePageArena& arena, QuantScratch& scratch) {
  if (!Supports(parts) || max_rows <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": no quantized kernel for these weights on this CPU"));
  }
  std::unique_ptr<QuantizedLinear> layer(new QuantizedLinear());
  layer->name_ = name;
  layer->k_ = static_cast<int>(parts[0]->cols);
  layer->max_rows_ = max_rows;
  layer->act_ = act;
  layer->scratch_ = &scratch;
  for (const TensorView* part : parts) {
    absl::StatusOr<PackedQuantMatrix> packed = PackQuantMatrix(*part, arena);
    if (!packed.ok()) {
      return absl::Status(packed.status().code(),
                          absl::StrCat(name, ": ", packed.status().message()));
    }
    layer->n_ += packed->n;
    layer->parts_.push_back(*packed);
  }
  if (bias != nullptr) layer->bias_.assign(bias, bias + layer->n_);
  return layer;
}

absl::Status QuantizedLinear::Run(const float* x, int m, float* y) {
  const Call call{this, x, m, y};
  return RunMany({&call, 1}, {scratch_, 1});
}

absl::Status QuantizedLinear::RunMany(std::span<const Call> calls,
                                      std::span<QuantScratch> scratch) {
  if (scratch.size() < calls.size()) {
    return absl::InternalError(absl::StrCat("QuantizedLinear::RunMany: ", calls.size(),
                                            " calls, scratch for ", scratch.size()));
  }
  absl::InlinedVector<QuantMatmulJob, 16> jobs;  // (no allocation per call)
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& call = calls[i];
    const QuantizedLinear& layer = *call.layer;
    if (call.m < 1 || call.m > layer.max_rows_) {
      return absl::InvalidArgumentError(
          absl::StrCat(layer.name_, ": rows must be in [1, ", layer.max_rows_, "], got ", call.m));
    }
    // Each activation layout at most once per call, however many parts want it.
    bool quantized32 = false, quantized256 = false;
    int col0 = 0;
    for (const PackedQuantMatrix& part : layer.parts_) {
      const bool block256 = ActivationBlockFor(part.dtype) == 256;
      QuantizedActivations& activations = block256 ? scratch[i].block256 : scratch[i].block32;
      bool& done = block256 ? quantized256 : quantized32;
      if (!done) {
        activations.Quantize(call.x, call.m, layer.k_, block256 ? 256 : 32);
        done = true;
      }
      jobs.push_back({&part, &activations, call.y + col0, layer.n_});
      col0 += part.n;
    }
  }
  QuantMatmuls(jobs);
  for (const Call& call : calls) {
    const QuantizedLinear& layer = *call.layer;
    if (!layer.bias_.empty()) {
      for (int r = 0; r < call.m; ++r) {
        AddInPlace(layer.bias_.data(), layer.n_, call.y + static_cast<int64_t>(r) * layer.n_);
      }
    }
    if (layer.act_ == LinearActivation::kGeluTanh) {
      GeluTanh(call.y, static_cast<int64_t>(call.m) * layer.n_, call.y);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> QuantizedLinear::ImplementationName(int m) {
  if (m < 1 || m > max_rows_) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": rows must be in [1, ", max_rows_, "]"));
  }
  std::set<std::string> types;
  std::string out = "vnni:";
  for (const PackedQuantMatrix& part : parts_) {
    if (types.insert(DTypeName(part.dtype)).second) {
      absl::StrAppend(&out, types.size() > 1 ? "+" : "", DTypeName(part.dtype));
    }
  }
  return out;
}

int64_t QuantizedLinear::weight_bytes() const {
  int64_t bytes = 0;
  for (const PackedQuantMatrix& part : parts_) bytes += part.bytes();
  return bytes;
}

}  // namespace textgen::model::ops
