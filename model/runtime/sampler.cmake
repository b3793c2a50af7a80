# Owned by the sampler component; defines textgen_sampler (logits processors + sampling).
add_library(textgen_sampler STATIC ${CMAKE_CURRENT_SOURCE_DIR}/runtime/sampler.cc)
# Lets GCC vectorize the branch-free exp over the vocab (no result changes: no reassociation,
# no finite-math assumptions; the sampler never reads errno or FP exception flags).
target_compile_options(textgen_sampler PRIVATE -fno-trapping-math -fno-math-errno)
target_link_libraries(textgen_sampler PRIVATE textgen_warnings)
