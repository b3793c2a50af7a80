// textgen-bench-vnni-ports: what one core's VPDPBUSD throughput becomes when the quantized
// kernels' other instructions run beside it. Each benchmark times, in turn, a loop of 24
// independent VPDPBUSD (the int8 peak) and the same loop with other instructions mixed in, and
// reports the mixed loop's rate ("VPDPBUSD/ns") and its share of the plain loop's ("share").
// The loops are written in assembly: compiled intrinsics add register copies and address
// arithmetic of their own (an earlier intrinsic version of the broadcast case measured those,
// not the broadcasts). Registers only, except the broadcasts, loads and stores (L1).
//
// The question it answers: which of a kernel's non-multiply instructions take slots from
// VPDPBUSD. A K-quant kernel must scale every 32-k sub-block's integer sums (VPMULLD or
// VPDPWSSD) and every block's float sums (VMULPS, VFMADD): see docs/quantized-kernels.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "model/kernels/quant/quant_matmul.h"

namespace {

#define TEXTGEN_ASM_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni"), noinline))

// 8 VPDPBUSD into accumulators zmm a..a+7 (operands zmm24, zmm25).
#define DP(a) "vpdpbusd %%zmm25, %%zmm24, %%zmm" #a "\n\t"
#define DP8(a, b, c, d, e, f, g, h) DP(a) DP(b) DP(c) DP(d) DP(e) DP(f) DP(g) DP(h)

// The other instructions, one group after every 8 VPDPBUSD: `t` is the group's own result
// register (zmm27, 28 or 29, so no group waits on another), `off` a byte offset into
// scratch_memory for the memory forms.
#define NOTHING(t, off)
#define MULLD(t, off) "vpmulld %%zmm24, %%zmm26, %%zmm" t "\n\t"
#define DPWSSD(t, off) "vpdpwssd %%zmm24, %%zmm26, %%zmm" t "\n\t"
#define FMADD(t, off) "vfmadd231ps %%zmm24, %%zmm25, %%zmm" t "\n\t"
#define MULPS(t, off) "vmulps %%zmm24, %%zmm25, %%zmm" t "\n\t"
#define CVT(t, off) "vcvtdq2ps %%zmm26, %%zmm" t "\n\t"
#define CVT_MULPS_FMADD(t, off) CVT(t, off) MULPS(t, off) FMADD(t, off)
#define ADD(t, off) "vpaddd %%zmm24, %%zmm26, %%zmm" t "\n\t"
#define UNPACK(t, off) "vpsrlw $4, %%zmm26, %%zmm" t "\n\tvpandd %%zmm24, %%zmm26, %%zmm" t "\n\t"
#define LOAD(t, off) "vmovdqu64 " off "(%1), %%zmm" t "\n\t"
#define STORE(t, off) "vmovdqu64 %%zmm26, " off "(%1)\n\t"
#define BROADCAST(t, off) "vpbroadcastd " off "(%1), %%zmm" t "\n\t"

#define CLOBBERS                                                                                \
  "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",     \
      "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", \
      "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", \
      "xmm30", "xmm31"

// 1.0f everywhere: the operands every loop starts from (finite, normal: no float slow paths).
alignas(64) float scratch_memory[1024];

// clang-format off
// Loads the operand and scratch registers zmm24..31 before a loop.
#define OPERANDS(r) "vbroadcastss (%1), %%zmm" #r "\n\t"
#define START                                                                               \
  OPERANDS(24) OPERANDS(25) OPERANDS(26) OPERANDS(27)                                       \
  OPERANDS(28) OPERANDS(29) OPERANDS(30) OPERANDS(31)                                       \
  "1:\n\t"
#define END "dec %0\n\tjnz 1b"

// 24 VPDPBUSD and three groups of OTHER per iteration.
#define DEFINE_MIX(name, OTHER)                                                             \
  TEXTGEN_ASM_TARGET double name(int64_t iterations) {                                      \
    const auto start = std::chrono::steady_clock::now();                                    \
    asm volatile(START                                                                      \
                 DP8(0, 1, 2, 3, 4, 5, 6, 7) OTHER("27", "0")                               \
                 DP8(8, 9, 10, 11, 12, 13, 14, 15) OTHER("28", "256")                       \
                 DP8(16, 17, 18, 19, 20, 21, 22, 23) OTHER("29", "512")                     \
                 END                                                                        \
                 : "+r"(iterations) : "r"(scratch_memory) : CLOBBERS);                     \
    return SecondsSince(start);                                                             \
  }

// The prefill kernels' shape: each broadcast activation quad (rows 1 KiB apart) feeds the
// VPDPBUSD of 2 or 4 panels (weights in zmm24..27); 24 accumulators.
#define BCAST(r, off) "vpbroadcastd " off "(%1), %%zmm" r "\n\t"
#define USE(r, w, a) "vpdpbusd %%zmm" r ", %%zmm" w ", %%zmm" a "\n\t"
#define USE2(r, a, b) USE(r, "24", a) USE(r, "25", b)
#define USE4(r, a, b, c, d) USE2(r, a, b) USE(r, "26", c) USE(r, "27", d)
// clang-format on

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

DEFINE_MIX(Plain, NOTHING)
DEFINE_MIX(WithMulld, MULLD)
DEFINE_MIX(WithDpwssd, DPWSSD)
DEFINE_MIX(WithFmadd, FMADD)
DEFINE_MIX(WithMulps, MULPS)
DEFINE_MIX(WithCvt, CVT)
DEFINE_MIX(WithCvtMulpsFmadd, CVT_MULPS_FMADD)
DEFINE_MIX(WithAdd, ADD)
DEFINE_MIX(WithUnpack, UNPACK)
DEFINE_MIX(WithLoad, LOAD)
DEFINE_MIX(WithStore, STORE)
DEFINE_MIX(WithBroadcast, BROADCAST)

TEXTGEN_ASM_TARGET double BroadcastPerTwo(int64_t iterations) {
  const auto start = std::chrono::steady_clock::now();
  // clang-format off
  asm volatile(START
               BCAST("28", "0")    USE2("28", "0", "1")   BCAST("29", "1024") USE2("29", "2", "3")
               BCAST("30", "2048") USE2("30", "4", "5")   BCAST("31", "3072") USE2("31", "6", "7")
               BCAST("28", "4")    USE2("28", "8", "9")   BCAST("29", "1028") USE2("29", "10", "11")
               BCAST("30", "2052") USE2("30", "12", "13") BCAST("31", "3076") USE2("31", "14", "15")
               BCAST("28", "8")    USE2("28", "16", "17") BCAST("29", "1032") USE2("29", "18", "19")
               BCAST("30", "2056") USE2("30", "20", "21") BCAST("31", "3080") USE2("31", "22", "23")
               END
               : "+r"(iterations) : "r"(scratch_memory) : CLOBBERS);
  // clang-format on
  return SecondsSince(start);
}

TEXTGEN_ASM_TARGET double BroadcastPerFour(int64_t iterations) {
  const auto start = std::chrono::steady_clock::now();
  // clang-format off
  asm volatile(START
               BCAST("28", "0")    USE4("28", "0", "1", "2", "3")
               BCAST("29", "1024") USE4("29", "4", "5", "6", "7")
               BCAST("30", "2048") USE4("30", "8", "9", "10", "11")
               BCAST("31", "3072") USE4("31", "12", "13", "14", "15")
               BCAST("28", "4")    USE4("28", "16", "17", "18", "19")
               BCAST("29", "1028") USE4("29", "20", "21", "22", "23")
               END
               : "+r"(iterations) : "r"(scratch_memory) : CLOBBERS);
  // clang-format on
  return SecondsSince(start);
}

// Runs the plain loop and `mixed` in turn; both execute 24 VPDPBUSD per iteration.
void RunAgainstPlain(benchmark::State& state, double (*mixed)(int64_t)) {
  if (!textgen::model::ops::CpuSupportsQuantMatmul()) {
    state.SkipWithError("CPU lacks AVX512-VNNI");
    return;
  }
  std::fill(std::begin(scratch_memory), std::end(scratch_memory), 1.0f);
  constexpr int64_t kIterations = int64_t{1} << 20;
  double plain_seconds = 0, mixed_seconds = 0;
  for (auto _ : state) {
    plain_seconds += Plain(kIterations);
    mixed_seconds += mixed(kIterations);
  }
  const double instructions = 24.0 * kIterations * static_cast<double>(state.iterations());
  state.counters["VPDPBUSD/ns"] = instructions / mixed_seconds / 1e9;
  state.counters["share"] = plain_seconds / mixed_seconds;
}

}  // namespace

BENCHMARK_CAPTURE(RunAgainstPlain, nothing, Plain);
BENCHMARK_CAPTURE(RunAgainstPlain, vpmulld_per_8, WithMulld);
BENCHMARK_CAPTURE(RunAgainstPlain, vpdpwssd_per_8, WithDpwssd);
BENCHMARK_CAPTURE(RunAgainstPlain, vfmadd_per_8, WithFmadd);
BENCHMARK_CAPTURE(RunAgainstPlain, vmulps_per_8, WithMulps);
BENCHMARK_CAPTURE(RunAgainstPlain, vcvtdq2ps_per_8, WithCvt);
BENCHMARK_CAPTURE(RunAgainstPlain, cvt_mulps_fmadd_per_8, WithCvtMulpsFmadd);
BENCHMARK_CAPTURE(RunAgainstPlain, vpaddd_per_8, WithAdd);
BENCHMARK_CAPTURE(RunAgainstPlain, nibble_unpack_per_8, WithUnpack);
BENCHMARK_CAPTURE(RunAgainstPlain, load_per_8, WithLoad);
BENCHMARK_CAPTURE(RunAgainstPlain, store_per_8, WithStore);
BENCHMARK_CAPTURE(RunAgainstPlain, broadcast_per_8, WithBroadcast);
BENCHMARK_CAPTURE(RunAgainstPlain, consumed_broadcast_per_2, BroadcastPerTwo);
BENCHMARK_CAPTURE(RunAgainstPlain, consumed_broadcast_per_4, BroadcastPerFour);

BENCHMARK_MAIN();
