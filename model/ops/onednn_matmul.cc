#include "model/ops/onednn_matmul.h"

#include <omp.h>

#include <cstring>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "model/ops/activations.h"
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

using EntryKey = std::tuple<int, int, bool, int, int>;  // n, k, has_bias, act, m

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
  std::vector<uint16_t> staging;  // [max_rows * max_cols] bf16 activations
  absl::flat_hash_map<EntryKey, std::unique_ptr<MatmulEntry>> entries;
};

bool CpuHasBf16() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto need = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & need) == need;
}

absl::StatusOr<std::unique_ptr<OnednnContext>> OnednnContext::Create(int threads, bool bf16,
                                                                     int max_rows, int max_cols) {
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

  Dt act_dt() const { return ctx->bf16 ? Dt::bf16 : Dt::f32; }

  dnnl::matmul::primitive_desc MakePd(int m, const memory::desc& wei_md) const {
    const memory::desc src_md({m, k}, act_dt(), Tag::ab);
    const memory::desc dst_md({m, n}, Dt::f32, Tag::ab);
    dnnl::primitive_attr attr;
    if (act == LinearActivation::kGeluTanh) {
      dnnl::post_ops po;
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
      attr.set_post_ops(po);
    }
    if (bias) {
      const memory::desc bias_md({1, n}, Dt::f32, Tag::ab);
      return {dnnl::matmul::desc(src_md, wei_md, bias_md, dst_md), attr, ctx->engine};
    }
    return {dnnl::matmul::desc(src_md, wei_md, dst_md), attr, ctx->engine};
  }

  absl::StatusOr<MatmulEntry*> Entry(int m) {
    if (m < 1 || m > max_rows) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": rows must be in [1, ", max_rows, "], got ", m));
    }
    if (by_m[m] != nullptr) return by_m[m];
    const EntryKey key{n, k, static_cast<bool>(bias), static_cast<int>(act), m};
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
};

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(OnednnContext& context,
                                                       const std::string& name, const float* weight,
                                                       const float* bias, int n, int k,
                                                       LinearActivation act, int max_rows) {
  if (n <= 0 || k <= 0 || max_rows <= 0 || weight == nullptr) {
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
    impl->weights = memory(impl->weights_md, eng);
    // W is [n, k] row-major == [k, n] in "ba" order; reorder (and convert to bf16) once.
    memory user({{k, n}, Dt::f32, Tag::ba}, eng, const_cast<float*>(weight));
    dnnl::reorder(user, impl->weights).execute(impl->ctx->stream, user, impl->weights);
    impl->ctx->stream.wait();
  } catch (const dnnl::error& e) {
    return DnnlError(absl::StrCat(name, ": preparing weights [", n, ", ", k, "]"), e);
  }
  return std::unique_ptr<Linear>(new Linear(std::move(impl)));
}

Linear::Linear(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Linear::~Linear() = default;
int Linear::n() const { return impl_->n; }
int Linear::k() const { return impl_->k; }

absl::StatusOr<std::string> Linear::ImplementationName(int m) {
  absl::StatusOr<MatmulEntry*> entry = impl_->Entry(m);
  if (!entry.ok()) return entry.status();
  return (*entry)->impl_name;
}

absl::Status Linear::Run(const float* x, int m, float* y) {
  absl::StatusOr<MatmulEntry*> entry_or = impl_->Entry(m);
  if (!entry_or.ok()) return entry_or.status();
  MatmulEntry& entry = **entry_or;
  OnednnContext::Impl& ctx = *impl_->ctx;
  const void* src = x;
  if (ctx.bf16) {
    // bf16 matmuls need bf16 activations; rounding is per element, so per row.
    ConvertToBf16(x, static_cast<int64_t>(m) * impl_->k, ctx.staging.data());
    src = ctx.staging.data();
  }
  try {
    entry.src.set_data_handle(const_cast<void*>(src));
    entry.weights.set_data_handle(impl_->weights.get_data_handle());
    if (impl_->bias) entry.bias.set_data_handle(impl_->bias.get_data_handle());
    entry.dst.set_data_handle(y);
    entry.primitive.execute(ctx.stream, entry.args);
    ctx.stream.wait();
  } catch (const dnnl::error& e) {
    return DnnlError(absl::StrCat(impl_->name, ": matmul of ", m, " rows"), e);
  }
  return absl::OkStatus();
}

}  // namespace textgen::model::ops
