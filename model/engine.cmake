#Owned by the engine component; defines textgen_engine(oneDNN forward pass + KV cache).
#Only model / ops/* include dnnl.hpp.
find_package(OpenMP REQUIRED)
add_library(textgen_engine STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/engine.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kv_cache.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/transformer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/weight_staging.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/system_memory.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ops/activations.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ops/attention.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ops/cpu_features.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ops/norms.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ops/onednn_matmul.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ops/reference.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ops/rope.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ops/skinny_matmul.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/ops/huge_page_arena.cc
)
target_link_libraries(textgen_engine
  PUBLIC textgen_loader absl::status absl::statusor absl::strings absl::flat_hash_map
  PRIVATE DNNL::dnnl OpenMP::OpenMP_CXX textgen_warnings)
# FP exception flags are never read here; without them GCC can if-convert and vectorize the
# clamped exp in SwiGLU and softmax (results are unchanged).
target_compile_options(textgen_engine PRIVATE -fno-trapping-math)
