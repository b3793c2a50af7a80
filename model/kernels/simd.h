#pragma once

// Per-row kernels are compiled twice (AVX-512 and baseline) and picked once at load time
// by the dynamic loader (GCC function multiversioning), since the project builds without
// -march. A kernel computes each row the same way whatever the batch, so batch invariance
// holds for either clone. Sanitizer builds skip the clones: their ifunc resolvers run before
// the ASan/TSan runtime is up and crash it.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define TEXTGEN_SIMD_CLONES __attribute__((target_clones("avx512f", "default"), noinline))
#else
#define TEXTGEN_SIMD_CLONES
#endif
