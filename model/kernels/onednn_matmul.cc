#include "model/kernels/onednn_matmul.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "model/kernels/activations.h"
#include "model/kernels/huge_page_arena.h"
#include "model/kernels/skinny_matmul.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace textgen::model::ops {

using dnnl::memory;
using Dt = memory::data_type;
using Tag = memory::format_tag;

namespace {

absl::Status DnnlError(const std::string& what, const dnnl::error& e) {
  return absl::InternalError(
      absl::StrCat("oneDNN: ", what, ": ", e.what(), " (status ", static_cast<int>(e.status), ")"));
}

// One fixed-M primitive with its argument memories; data handles are set per call so the
// same entry serves every layer of that shape (no allocation when running).
struct MatmulEntry {
  dnnl::matmul primitive;
  memory src, weights, bias, dst;
  std::unordered_map<int, memory> args;
  std::string impl_name;
};

using EntryKey = std::tuple<int, int, bool, int>;  // n, k, has_bias, m

// The N block of a packed [k, n] weight layout (rows of W per block); 1 when N is not blocked.
int PackedRowBlock(const memory::desc& md) {
  const auto& blocking = md.data.format_desc.blocking;
  int block = 1;
  for (int i = 0; i < blocking.inner_nblks; ++i) {
    if (blocking.inner_idxs[i] == 1) block *= static_cast<int>(blocking.inner_blks[i]);
  }
  return block;
}

// Deterministic probe values in [-1, 1) for checking the skinny kernel against oneDNN.
std::vector<float> ProbeValues(size_t count, uint32_t seed) {
  std::vector<float> v(count);
  uint32_t state = seed * 2654435761u + 1;
  for (float& x : v) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

// Where oneDNN 2.6.3's brgemm splits K (measured: one block up to 512, 512 up to 1024,
// 1024 beyond); the alternatives cover other versions. Checked bitwise before use.
std::vector<int> KChunkCandidates(int k) {
  std::vector<int> out;
  for (int c : {k <= 1024 ? 512 : 1024, 512, 1024, 2048, k}) {
    const int chunk = std::min(c, k);
    if (std::find(out.begin(), out.end(), chunk) == out.end()) out.push_back(chunk);
  }
  return out;
}

// Caps oneDNN at AVX512-BF16 before it generates its first kernel. On CPUs with AMX (and
// AVX512-FP16), oneDNN 2.6 picks AMX brgemm for M >= 2 but AVX-512 for M = 1, and blocks K by
// the newer ISA's rules: a row's sums then depend on the batch it ran in, and the skinny
// kernel's bitwise twin of brgemm no longer holds. One kernel family for every M is what
// makes output batch-invariant; AMX prefill would need an AMX-exact skinny kernel first.
// oneDNN's ISA cap is process-wide and settable once, hence the one-time initialiser.
void CapOnednnIsaForBatchInvariance() {
  static const bool capped = [] {
    try {
      dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx512_core_bf16);
    } catch (const dnnl::error&) {
      // Already latched (ONEDNN_MAX_CPU_ISA or an earlier kernel): the invariance tests say
      // whether what was latched keeps rows batch-independent.
    }
    return true;
  }();
  (void)capped;
}

}  // namespace

// ============================================================================
// OnednnContext
// ============================================================================

struct OnednnContext::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  bool bf16 = false;
  int threads = 1;
  int max_cols = 0;
  int skinny_max_rows = kDefaultSkinnyMaxRows;
  std::vector<uint16_t> staging;  // [max_rows * max_cols] bf16 activations
  HugePageArena weight_memory;    // packed weights of every Linear made with this context
  absl::flat_hash_map<EntryKey, std::unique_ptr<MatmulEntry>> entries;
};

bool CpuHasBf16() {
  CapOnednnIsaForBatchInvariance();
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto need = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & need) == need;
}

absl::StatusOr<std::unique_ptr<OnednnContext>> OnednnContext::Create(int threads, bool bf16,
                                                                     int max_rows, int max_cols) {
  CapOnednnIsaForBatchInvariance();
  if (threads < 0)
    return absl::InvalidArgumentError(absl::StrCat("threads must be >= 0, got ", threads));
  if (bf16 && !CpuHasBf16()) {
    return absl::FailedPreconditionError(
        "bf16 compute needs AVX512-BF16, which this CPU (as seen by oneDNN) lacks; use f32");
  }
  if (threads > 0) omp_set_num_threads(threads);
  try {
    auto impl = std::make_unique<Impl>();
    impl->bf16 = bf16;
    impl->threads = omp_get_max_threads();
    impl->max_cols = max_cols;
    if (bf16) impl->staging.resize(static_cast<size_t>(max_rows) * max_cols);
    return std::unique_ptr<OnednnContext>(new OnednnContext(std::move(impl)));
  } catch (const dnnl::error& e) {
    return DnnlError("creating the CPU engine", e);
  }
}

OnednnContext::OnednnContext(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnednnContext::~OnednnContext() = default;
bool OnednnContext::bf16() const { return impl_->bf16; }
int OnednnContext::threads() const { return impl_->threads; }
int OnednnContext::skinny_max_rows() const { return impl_->skinny_max_rows; }
void OnednnContext::set_skinny_max_rows(int rows) { impl_->skinny_max_rows = std::max(rows, 0); }

// ============================================================================
// Linear
// ============================================================================

struct Linear::Impl {
  OnednnContext::Impl* ctx = nullptr;
  std::string name;
  int n = 0, k = 0, max_rows = 0;
  LinearActivation act = LinearActivation::kNone;
  memory::desc weights_md;         // packed layout picked by oneDNN
  memory weights;                  // [k, n] packed, f32 or bf16
  memory bias;                     // [1, n] f32 or empty
  std::vector<MatmulEntry*> by_m;  // [max_rows + 1], filled on first use
  SkinnyWeights skinny;            // view of `weights` for the weight-streaming kernel
  bool skinny_enabled = false;     // it matched oneDNN bitwise at load
  int skinny_max_rows = 0;         // rows up to this use it

  Dt act_dt() const { return ctx->bf16 ? Dt::bf16 : Dt::f32; }

  dnnl::matmul::primitive_desc MakePd(int m, const memory::desc& wei_md) const {
    const memory::desc src_md({m, k}, act_dt(), Tag::ab);
    const memory::desc dst_md({m, n}, Dt::f32, Tag::ab);
    // No fused activation: the skinny kernel must produce the same pre-activation values,
    // and both paths then share one GELU (ops::GeluTanh).
    if (bias) {
      const memory::desc bias_md({1, n}, Dt::f32, Tag::ab);
      return {dnnl::matmul::desc(src_md, wei_md, bias_md, dst_md), ctx->engine};
    }
    return {dnnl::matmul::desc(src_md, wei_md, dst_md), ctx->engine};
  }

  absl::Status CheckRows(int m) const {
    if (m >= 1 && m <= max_rows) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": rows must be in [1, ", max_rows, "], got ", m));
  }

  absl::StatusOr<MatmulEntry*> Entry(int m) {
    if (absl::Status s = CheckRows(m); !s.ok()) return s;
    if (by_m[m] != nullptr) return by_m[m];
    const EntryKey key{n, k, static_cast<bool>(bias), m};
    auto& slot = ctx->entries[key];
    if (slot == nullptr) {
      try {
        // The packed weight layout is fixed: every M must use the one chosen at load.
        auto pd = MakePd(m, weights_md);
        auto entry = std::make_unique<MatmulEntry>();
        entry->primitive = dnnl::matmul(pd);
        entry->impl_name = pd.impl_info_str();
        entry->src = memory(pd.src_desc(), ctx->engine, nullptr);
        entry->weights = memory(weights_md, ctx->engine, nullptr);
        entry->dst = memory(pd.dst_desc(), ctx->engine, nullptr);
        entry->args = {{DNNL_ARG_SRC, entry->src},
                       {DNNL_ARG_WEIGHTS, entry->weights},
                       {DNNL_ARG_DST, entry->dst}};
        if (bias) {
          entry->bias = memory(bias.get_desc(), ctx->engine, nullptr);
          entry->args[DNNL_ARG_BIAS] = entry->bias;
        }
        slot = std::move(entry);
      } catch (const dnnl::error& e) {
        ctx->entries.erase(key);
        return DnnlError(absl::StrCat(name, ": creating matmul for ", m, " rows"), e);
      }
    }
    by_m[m] = slot.get();
    return by_m[m];
  }

  // y = x W^T + b through oneDNN; x is f32, or bf16 when the context is.
  absl::Status RunOnednn(const void* src, int m, float* y) {
    absl::StatusOr<MatmulEntry*> entry_or = Entry(m);
    if (!entry_or.ok()) return entry_or.status();
    MatmulEntry& entry = **entry_or;
    try {
      entry.src.set_data_handle(const_cast<void*>(src));
      entry.weights.set_data_handle(weights.get_data_handle());
      if (bias) entry.bias.set_data_handle(bias.get_data_handle());
      entry.dst.set_data_handle(y);
      entry.primitive.execute(ctx->stream, entry.args);
      ctx->stream.wait();
    } catch (const dnnl::error& e) {
      return DnnlError(absl::StrCat(name, ": matmul of ", m, " rows"), e);
    }
    return absl::OkStatus();
  }

  // Points the skinny kernel at the packed weights if their layout is the one it reads,
  // then finds the K chunking that reproduces oneDNN bitwise on probe rows. Leaves the
  // kernel off (oneDNN serves every M) when the CPU, layout or results do not fit.
  absl::Status PrepareSkinny() {
    skinny_max_rows = std::min(ctx->skinny_max_rows, max_rows);
    if (skinny_max_rows == 0 || !CpuSupportsSkinnyMatmul(ctx->bf16)) return absl::OkStatus();
    const dnnl_memory_desc_t& md = weights_md.data;
    const dnnl_blocking_desc_t& blk = md.format_desc.blocking;
    const int k_block = ctx->bf16 ? 32 : 16;
    const bool layout_fits =
        md.format_kind == dnnl_blocked && md.ndims == 2 && md.offset0 == 0 &&
        blk.inner_nblks == (ctx->bf16 ? 3 : 2) && blk.inner_blks[0] == 16 &&
        blk.inner_idxs[0] == 0 && blk.inner_blks[1] == kSkinnyPanelColumns &&
        blk.inner_idxs[1] == 1 &&
        (!ctx->bf16 || (blk.inner_blks[2] == 2 && blk.inner_idxs[2] == 0)) &&
        blk.strides[0] == static_cast<dnnl_dim_t>(k_block) * kSkinnyPanelColumns &&
        blk.strides[1] == md.padded_dims[0] * kSkinnyPanelColumns;
    if (!layout_fits) return absl::OkStatus();
    skinny.data = weights.get_data_handle();
    skinny.bf16 = ctx->bf16;
    skinny.n = n;
    skinny.k = k;
    skinny.panel_stride = blk.strides[1];

    // Several rows, so the kernel's row blocking is covered by the check too.
    const int rows = std::min(max_rows, 3);
    const std::vector<float> x = ProbeValues(static_cast<size_t>(rows) * k, n + k);
    std::vector<uint16_t> x_bf16;
    const void* src = x.data();
    if (ctx->bf16) {
      x_bf16.resize(x.size());
      ConvertToBf16(x.data(), static_cast<int64_t>(x.size()), x_bf16.data());
      src = x_bf16.data();
    }
    std::vector<float> want(static_cast<size_t>(rows) * n), got(want.size());
    if (absl::Status s = RunOnednn(src, rows, want.data()); !s.ok()) return s;
    for (int chunk : KChunkCandidates(k)) {
      skinny.k_chunk = chunk;
      SkinnyMatmul(skinny, src, rows,
                   bias ? static_cast<const float*>(bias.get_data_handle()) : nullptr, got.data());
      if (std::memcmp(got.data(), want.data(), sizeof(float) * want.size()) == 0) {
        skinny_enabled = true;
        return absl::OkStatus();
      }
    }
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(OnednnContext& context,
                                                       const std::string& name, const float* weight,
                                                       const float* bias, int n, int k,
                                                       LinearActivation act, int max_rows) {
  return CreateFrom(context, name, weight, nullptr, /*weight_bf16=*/false, bias, n, k, act,
                    max_rows);
}

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(OnednnContext& context,
                                                       const std::string& name,
                                                       const uint16_t* weight_bf16,
                                                       const float* bias, int n, int k,
                                                       LinearActivation act, int max_rows) {
  return CreateFrom(context, name, weight_bf16, nullptr, /*weight_bf16=*/true, bias, n, k, act,
                    max_rows);
}

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(OnednnContext& context,
                                                       const std::string& name,
                                                       const WeightRows& rows, bool rows_bf16,
                                                       const float* bias, int n, int k,
                                                       LinearActivation act, int max_rows) {
  return CreateFrom(context, name, nullptr, &rows, rows_bf16, bias, n, k, act, max_rows);
}

absl::StatusOr<std::unique_ptr<Linear>> Linear::CreateFrom(
    OnednnContext& context, const std::string& name, const void* weight, const WeightRows* rows,
    bool weight_bf16, const float* bias, int n, int k, LinearActivation act, int max_rows) {
  if (n <= 0 || k <= 0 || max_rows <= 0 || (weight == nullptr && rows == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": bad linear shape n=", n, " k=", k, " max_rows=", max_rows));
  }
  if (context.bf16() && k > context.impl().max_cols) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": k=", k, " exceeds the context's bf16 staging width ", context.impl().max_cols));
  }
  auto impl = std::make_unique<Impl>();
  impl->ctx = &context.impl();
  impl->name = name;
  impl->n = n;
  impl->k = k;
  impl->max_rows = max_rows;
  impl->act = act;
  impl->by_m.assign(max_rows + 1, nullptr);
  try {
    auto& eng = impl->ctx->engine;
    if (bias != nullptr) {
      impl->bias = memory({{1, n}, Dt::f32, Tag::ab}, eng);
      std::memcpy(impl->bias.get_data_handle(), bias, sizeof(float) * n);
    }
    // Ask oneDNN for its preferred weight layout (it does not depend on M here).
    const memory::desc any_md({k, n}, impl->act_dt(), Tag::any);
    auto pd = impl->MakePd(std::min(max_rows, 16), any_md);
    impl->weights_md = pd.weights_desc();
    absl::StatusOr<void*> storage = impl->ctx->weight_memory.Allocate(impl->weights_md.get_size());
    if (!storage.ok()) return storage.status();
    impl->weights = memory(impl->weights_md, eng, *storage);
    // W is [n, k] row-major == [k, n] in "ba" order; reorder (and convert to bf16) once.
    const Dt user_dt = weight_bf16 ? Dt::bf16 : Dt::f32;
    if (weight != nullptr) {
      memory user({{k, n}, user_dt, Tag::ba}, eng, const_cast<void*>(weight));
      dnnl::reorder(user, impl->weights).execute(impl->ctx->stream, user, impl->weights);
    } else {
      // Row blocks into the matching slices of the packed layout: each slice starts on a
      // multiple of the layout's N block, as a sub-memory must.
      const int block = PackedRowBlock(impl->weights_md);
      const int64_t per_chunk = std::max<int64_t>(1, (int64_t{1} << 22) / k / block) * block;
      const int chunk_rows = static_cast<int>(std::min<int64_t>(per_chunk, n));
      std::vector<uint8_t> chunk(static_cast<size_t>(chunk_rows) * k * (weight_bf16 ? 2 : 4));
      for (int begin = 0; begin < n; begin += chunk_rows) {
        const int count = std::min(chunk_rows, n - begin);
        (*rows)(begin, count, chunk.data());
        memory user({{k, count}, user_dt, Tag::ba}, eng, chunk.data());
        memory slice(impl->weights_md.submemory_desc({k, count}, {0, begin}), eng,
                     impl->weights.get_data_handle());
        dnnl::reorder(user, slice).execute(impl->ctx->stream, user, slice);
        impl->ctx->stream.wait();
      }
    }
    impl->ctx->stream.wait();
  } catch (const dnnl::error& e) {
    return DnnlError(absl::StrCat(name, ": preparing weights [", n, ", ", k, "]"), e);
  }
  if (absl::Status s = impl->PrepareSkinny(); !s.ok()) return s;
  return std::unique_ptr<Linear>(new Linear(std::move(impl)));
}

Linear::Linear(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Linear::~Linear() = default;
int Linear::n() const { return impl_->n; }
int Linear::k() const { return impl_->k; }
bool Linear::skinny_enabled() const { return impl_->skinny_enabled; }

absl::StatusOr<std::string> Linear::ImplementationName(int m) {
  if (impl_->skinny_enabled && m >= 1 && m <= impl_->skinny_max_rows) {
    return std::string(impl_->skinny.bf16 ? "skinny:avx512_bf16" : "skinny:avx512");
  }
  absl::StatusOr<MatmulEntry*> entry = impl_->Entry(m);
  if (!entry.ok()) return entry.status();
  return (*entry)->impl_name;
}

absl::Status Linear::Run(const float* x, int m, float* y) {
  Impl& impl = *impl_;
  if (absl::Status s = impl.CheckRows(m); !s.ok()) return s;
  OnednnContext::Impl& ctx = *impl.ctx;
  const void* src = x;
  if (ctx.bf16) {
    // bf16 matmuls need bf16 activations; rounding is per element, so per row.
    ConvertToBf16(x, static_cast<int64_t>(m) * impl.k, ctx.staging.data());
    src = ctx.staging.data();
  }
  if (impl.skinny_enabled && m <= impl.skinny_max_rows) {
    SkinnyMatmul(impl.skinny, src, m,
                 impl.bias ? static_cast<const float*>(impl.bias.get_data_handle()) : nullptr, y);
  } else if (absl::Status s = impl.RunOnednn(src, m, y); !s.ok()) {
    return s;
  }
  if (impl.act == LinearActivation::kGeluTanh) GeluTanh(y, static_cast<int64_t>(m) * impl.n, y);
  return absl::OkStatus();
}

}  // namespace textgen::model::ops
