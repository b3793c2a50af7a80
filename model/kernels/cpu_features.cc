#include "model/kernels/cpu_features.h"

namespace textgen::model::ops {

// Asked once per process (the kernels ask on every call): immutable after first use.
bool CpuHasAvx512() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
  }();
  return has;
#else
  return false;
#endif
}

bool CpuHasAvx512Bf16() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = CpuHasAvx512() && __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

}  // namespace textgen::model::ops
