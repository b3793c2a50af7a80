#Owned by the engine component; defines textgen_engine(oneDNN forward pass + KV cache).
# Only model/kernels/* includes dnnl.hpp.
find_package(OpenMP REQUIRED)
add_library(textgen_engine STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/engine.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/kv_cache.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/transformer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/transformer_weights.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/weight_staging.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/system_memory.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/activations.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/attention.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/cpu_features.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/norms.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/onednn_matmul.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/reference.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/rope.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/skinny_matmul.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/huge_page_arena.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant/packed_quant_matrix.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant/quantized_activations.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant/quant_matmul.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant/quantized_linear.cc
)
target_link_libraries(textgen_engine
  PUBLIC textgen_loader absl::status absl::statusor absl::strings absl::flat_hash_map
  PRIVATE DNNL::dnnl OpenMP::OpenMP_CXX textgen_warnings)
# FP exception flags are never read here; without them GCC can if-convert and vectorize the
# clamped exp in SwiGLU and softmax (results are unchanged).
target_compile_options(textgen_engine PRIVATE -fno-trapping-math)
