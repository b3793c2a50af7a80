#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "model/kernels/huge_page_arena.h"

namespace textgen::bench {

// The DRAM read limit that bounds decode (weight bytes / this rate = the fastest a token can
// be), measured the same way by textgen-bench-quant-matmul's BM_ReadBandwidth and by
// textgen-bench-engine --read-probe: a 1 GiB buffer on 2 MiB pages read with AVX-512 loads,
// requesting 4 KiB ahead as the quantized kernels do, in contiguous 64 MiB parts that a
// thread pool takes in turn.
class ReadProbe {
 public:
  // Maps and fills the buffer (so the pages exist before the first timed read).
  static absl::StatusOr<ReadProbe> Create(size_t bytes = size_t{1} << 30);

  // Runs `run_parts(n, part)` once: the caller's pool runs part(i) for every i in [0, n), each
  // reading one contiguous piece. Returns the GB/s of that read.
  using PartRunner = absl::FunctionRef<void(int n, absl::FunctionRef<void(int)> part)>;
  double ReadOnce(PartRunner run_parts) const;

  // The best of `passes` reads.
  double Best(int passes, PartRunner run_parts) const;

  size_t bytes() const { return bytes_; }

 private:
  ReadProbe(std::unique_ptr<model::ops::HugePageArena> arena, const float* data, size_t bytes)
      : arena_(std::move(arena)), data_(data), bytes_(bytes) {}

  std::unique_ptr<model::ops::HugePageArena> arena_;
  const float* data_;
  size_t bytes_;
};

}  // namespace textgen::bench
