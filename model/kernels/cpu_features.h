#pragma once

namespace textgen::model::ops {

// Whether this CPU runs the AVX-512 kernels (F, BW, VL): checked at run time because the
// project builds without -march, and the kernels carry their ISA as function attributes.
bool CpuHasAvx512();
// AVX-512 plus the BF16 dot-product instructions (VDPBF16PS).
bool CpuHasAvx512Bf16();

}  // namespace textgen::model::ops
