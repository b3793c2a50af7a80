#include "tests/bench/read_probe.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <numeric>
#include <vector>

namespace textgen::bench {
namespace {

// 64 MiB parts: long contiguous streams, and enough of them that a pool of any size gets
// about equal work.
constexpr size_t kPartBytes = size_t{64} << 20;

// Sums floats [data, data + n) (n a multiple of 32, data 64-byte aligned) so that the loads
// cannot be optimised away.
__attribute__((target("avx512f"))) float ReadRange(const float* data, int64_t n) {
  __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 32) {
    // Requested ahead as the kernels do: the fastest read this core gets.
    _mm_prefetch(reinterpret_cast<const char*>(data + i + 1024), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(data + i + 1040), _MM_HINT_T0);
    a = _mm512_add_ps(a, _mm512_load_ps(data + i));
    b = _mm512_add_ps(b, _mm512_load_ps(data + i + 16));
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(a, b));
  return std::accumulate(std::begin(lanes), std::end(lanes), 0.0f);
}

}  // namespace

absl::StatusOr<ReadProbe> ReadProbe::Create(size_t bytes) {
  bytes = std::max(kPartBytes, bytes / kPartBytes * kPartBytes);
  auto arena = std::make_unique<model::ops::HugePageArena>();
  absl::StatusOr<void*> memory = arena->Allocate(bytes);
  if (!memory.ok()) return memory.status();
  auto* data = static_cast<float*>(*memory);
  for (size_t i = 0; i < bytes / sizeof(float); ++i) data[i] = static_cast<float>(i & 7);
  return ReadProbe(std::move(arena), data, bytes);
}

double ReadProbe::ReadOnce(PartRunner run_parts) const {
  const int parts = static_cast<int>(bytes_ / kPartBytes);
  const int64_t floats_per_part = static_cast<int64_t>(kPartBytes / sizeof(float));
  std::vector<float> sums(parts);  // kept, so no part's reads are dead
  const auto start = std::chrono::steady_clock::now();
  run_parts(parts, [&](int part) {
    sums[part] = ReadRange(data_ + part * floats_per_part, floats_per_part);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  volatile float total = std::accumulate(sums.begin(), sums.end(), 0.0f);
  static_cast<void>(total);
  return static_cast<double>(bytes_) / 1e9 / seconds;
}

double ReadProbe::Best(int passes, PartRunner run_parts) const {
  double best = 0.0;
  for (int i = 0; i < passes; ++i) best = std::max(best, ReadOnce(run_parts));
  return best;
}

}  // namespace textgen::bench
