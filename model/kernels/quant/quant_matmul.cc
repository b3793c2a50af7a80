#include "model/kernels/quant/quant_matmul.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "model/kernels/cpu_features.h"
#include "model/kernels/quant/quant_kernels.h"
#include "model/kernels/quant/quant_layouts.h"

namespace textgen::model::ops {
namespace {

using quant_kernel::Kernels;
using quant_kernel::KernelsOf;
using quant_kernel::kMaxPanelBlock;
using quant_kernel::kMaxRowBlock;
using quant_kernel::Rows;
using quant_kernel::RowTable;
using quant_kernel::UnpackedCodes;
using quant_layout::Layout;

// Rows from which a pass takes two panels.
constexpr int kPairMinRows = 8;

// Rows from which passes are compute-bound enough to be handed out dynamically.
constexpr int kDynamicMinRows = 64;

// Rows from which a pass unpacks its codes once rather than per row block.
constexpr int kUnpackMinRows = 3 * kMaxRowBlock;

// 64-byte aligned scratch for unpacked codes.
struct alignas(64) CacheLine {
  uint8_t bytes[64];
};

// One thread's run of flat pass indices [front, back), claimed by its owner from the front and
// by other threads from the back, in one atomic word so that no pass is taken twice.
struct alignas(64) PassRange {
  std::atomic<uint64_t> bits{0};

  static uint64_t Pack(int64_t front, int64_t back) {
    return static_cast<uint64_t>(back) << 32 | static_cast<uint32_t>(front);
  }
  void Reset(int64_t front, int64_t back) {
    bits.store(Pack(front, back), std::memory_order_relaxed);
  }
  int64_t Left() const {
    const uint64_t v = bits.load(std::memory_order_relaxed);
    return static_cast<int64_t>(v >> 32) - static_cast<int64_t>(v & 0xffffffffu);
  }
  // Claims the next eighth (at least one pass) of what is left; false when nothing is.
  bool TakeFront(int64_t& begin, int64_t& end) { return Take(begin, end, /*front=*/true); }
  // Claims the back half (at least one pass) of what is left; false when nothing is.
  bool TakeBack(int64_t& begin, int64_t& end) { return Take(begin, end, /*front=*/false); }

 private:
  bool Take(int64_t& begin, int64_t& end, bool front) {
    uint64_t v = bits.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t f = v & 0xffffffffu, b = v >> 32;
      if (f >= b) return false;
      const int64_t n = std::max<int64_t>(1, (b - f) / (front ? 8 : 2));
      begin = front ? f : b - n;
      end = front ? f + n : b;
      if (bits.compare_exchange_weak(v, front ? Pack(f + n, b) : Pack(f, b - n),
                                     std::memory_order_relaxed)) {
        return true;
      }
    }
  }
};

}  // namespace

bool CpuSupportsQuantMatmul() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = CpuHasAvx512() && __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

int ActivationBlockFor(DType dtype) { return quant_layout::LayoutOf(dtype)->block_elements; }

void QuantMatmul(const PackedQuantMatrix& w, const QuantizedActivations& x, float* y, int ldy) {
  const QuantMatmulJob job{&w, &x, y, ldy};
  QuantMatmuls({&job, 1});
}

namespace {

// Per job: few rows (decode) stream the weights from DRAM: one panel at a time keeps one
// weight stream per thread, as before pairs existed (DRAM-bound runs here swing 30-40%
// between rounds, too much to show pairs help or hurt there). Many rows are compute-bound.
struct Plan {
  const Layout* layout;
  const Kernels* kernels;
  int panels_per_pass;
  int passes;
  bool unpack;
  int64_t pass_cost;   // about the work of one pass: its panels times (its rows + a load)
  int64_t first_cost;  // of the jobs' passes, costed one after another
};

// (inline: this runs for every product of every step; a mixture's experts fit)
using Plans = absl::InlinedVector<Plan, 16>;

// The jobs' passes, numbered job by job ("flat"), and what running one takes.
class Passes {
 public:
  explicit Passes(std::span<const QuantMatmulJob> jobs) : jobs_(jobs), plans_(jobs.size()) {
    for (size_t j = 0; j < jobs.size(); ++j) {
      const QuantMatmulJob& job = jobs[j];
      const int m = job.x->rows();
      Plan& plan = plans_[j];
      plan.layout = quant_layout::LayoutOf(job.w->dtype);
      plan.kernels = &KernelsOf(job.w->dtype);
      plan.panels_per_pass = m >= kPairMinRows ? kMaxPanelBlock : 1;
      plan.passes = (job.w->panels + plan.panels_per_pass - 1) / plan.panels_per_pass;
      plan.unpack = plan.kernels->unpack != nullptr && m >= kUnpackMinRows;
      plan.pass_cost = int64_t{plan.panels_per_pass} * (m + 1);
      plan.first_cost = total_cost_;
      total_cost_ += plan.passes * plan.pass_cost;
      total_passes_ += plan.passes;
      compute_bound_ = compute_bound_ && m >= kDynamicMinRows;
      // Per thread: the codes of one pass, one byte each (16 k bytes per panel; in L2).
      if (plan.unpack) {
        pass_lines_ = std::max<int64_t>(
            pass_lines_, kMaxPanelBlock * int64_t{kQuantPanelColumns} * job.w->k / 64);
      }
    }
    // (left uninitialised: every byte a pass reads, it has written)
    if (pass_lines_ > 0) scratch_.reset(new CacheLine[omp_get_max_threads() * pass_lines_]);
  }

  const Plans& plans() const { return plans_; }
  int64_t total_cost() const { return total_cost_; }
  int64_t total_passes() const { return total_passes_; }
  bool compute_bound() const { return compute_bound_; }

  // Where a thread is in the flat numbering; it walks to pass i from there.
  struct Cursor {
    size_t job = 0;
    int64_t job_first = 0;  // the flat index of the job's first pass
  };
  void RunFlat(int thread, Cursor& at, int64_t i) const {
    while (i < at.job_first) at.job_first -= plans_[--at.job].passes;
    while (i >= at.job_first + plans_[at.job].passes) at.job_first += plans_[at.job++].passes;
    Run(thread, at.job, static_cast<int>(i - at.job_first));
  }

  // The flat index of the first pass whose cost starts at or after `cost`.
  int64_t FirstPassAt(int64_t cost) const {
    int64_t flat = 0;
    for (const Plan& plan : plans_) {
      const int64_t into = cost - plan.first_cost;
      if (into > 0)
        flat += std::min<int64_t>(plan.passes, (into + plan.pass_cost - 1) / plan.pass_cost);
    }
    return flat;
  }

 private:
  // One pass of job j: its panels times its rows, kMaxRowBlock rows at a time while the weights
  // are hot in cache. A pass computes its outputs alike whichever thread runs it.
  void Run(int thread, size_t j, int pass) const {
    const QuantMatmulJob& job = jobs_[j];
    const Plan& plan = plans_[j];
    const PackedQuantMatrix& w = *job.w;
    const int m = job.x->rows();
    const int p0 = pass * plan.panels_per_pass;
    const int np = std::min(plan.panels_per_pass, w.panels - p0);
    const int last_cols = std::min(kQuantPanelColumns, w.n - (p0 + np - 1) * kQuantPanelColumns);
    UnpackedCodes codes;
    if (plan.unpack) {
      codes = {scratch_[thread * pass_lines_].bytes, int64_t{kQuantPanelColumns} * w.k};
      for (int p = 0; p < np; ++p) plan.kernels->unpack(w, *plan.layout, p0 + p, p, codes);
    }
    const std::array<RowTable, kMaxPanelBlock>& table =
        plan.unpack ? plan.kernels->unpacked : plan.kernels->packed;
    for (int r0 = 0; r0 < m; r0 += kMaxRowBlock) {
      const int mr = std::min(kMaxRowBlock, m - r0);
      table[np - 1][mr - 1](w, *plan.layout, p0, Rows{job.x, r0}, codes,
                            job.y + static_cast<int64_t>(r0) * job.ldy + p0 * kQuantPanelColumns,
                            job.ldy, last_cols, /*prefetch=*/r0 == 0);
    }
  }

  const std::span<const QuantMatmulJob> jobs_;
  Plans plans_;
  int64_t total_cost_ = 0;
  int64_t total_passes_ = 0;
  int64_t pass_lines_ = 0;
  bool compute_bound_ = true;
  std::unique_ptr<CacheLine[]> scratch_;
};

// Many rows: passes are compute-bound and alike, so threads take them in turn from a shared
// counter; a thread slowed by a neighbour on its core then takes fewer instead of holding the
// others at the barrier.
void RunInTurn(const Passes& passes) {
  std::atomic<int64_t> next{0};
#pragma omp parallel
  {
    const int thread = omp_get_thread_num();
    Passes::Cursor at;
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < passes.total_passes();
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      passes.RunFlat(thread, at, i);
    }
  }
}

// Few rows stream the weights from DRAM: each thread streams one contiguous run of passes (of
// one job or of several in a row) of about equal work: jobs with more rows cost more per pass.
// A thread that ends its run first takes the back half of what another has not started, and
// again until nothing is left: a thread slowed by its neighbours (or by arriving late from
// serial work) no longer holds the other at the barrier, and each thread's own stream stays
// contiguous.
void RunInStreams(const Passes& passes) {
  const int max_threads = omp_get_max_threads();
  const std::unique_ptr<PassRange[]> ranges(new PassRange[max_threads]);
  // (set before the region: a thread that finds another's run empty never waits for it; a
  // run whose thread the team lacks is taken by the others)
  const int64_t total_cost = passes.total_cost();
  for (int t = 0; t < max_threads; ++t) {
    ranges[t].Reset(passes.FirstPassAt(total_cost * t / max_threads),
                    passes.FirstPassAt(total_cost * (t + 1) / max_threads));
  }
#pragma omp parallel
  {
    const int thread = omp_get_thread_num();
    Passes::Cursor at;
    int64_t begin, end;
    // Own run: from the front, an eighth of what is left at a time (few claims, and little
    // held back from a thief near the end).
    while (thread < max_threads && ranges[thread].TakeFront(begin, end)) {
      for (int64_t i = begin; i < end; ++i) passes.RunFlat(thread, at, i);
    }
    // Then the others' backs, the most loaded first.
    for (;;) {
      PassRange* victim = nullptr;
      int64_t most = 0;
      for (int t = 0; t < max_threads; ++t) {
        const int64_t left = ranges[t].Left();
        if (t != thread && left > most) most = left, victim = &ranges[t];
      }
      if (victim == nullptr) break;
      if (!victim->TakeBack(begin, end)) continue;
      for (int64_t i = begin; i < end; ++i) passes.RunFlat(thread, at, i);
    }
  }
}

}  // namespace

void QuantMatmuls(std::span<const QuantMatmulJob> jobs) {
  const Passes passes(jobs);
  if (passes.compute_bound()) return RunInTurn(passes);
  RunInStreams(passes);
}

}  // namespace textgen::model::ops
