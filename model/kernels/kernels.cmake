# textgen_kernels: matmul (oneDNN + weight streaming), attention, norms, RoPE, activations,
# the quantized VNNI kernels; each with its naive reference twin. The only code with dnnl.hpp.
find_package(OpenMP REQUIRED)
add_library(textgen_kernels STATIC
# Only model/kernels/* includes dnnl.hpp.
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/activations.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/attention.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/cpu_features.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/expert_routing.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/causal_conv.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/gated_delta_net.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/norms.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/onednn_matmul.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/reference.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/rope.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/selective_scan.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/skinny_matmul.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/huge_page_arena.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant/packed_quant_matrix.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant/quantized_activations.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant/quant_kernels.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant/quant_matmul.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant/quantized_linear.cc
)
target_link_libraries(textgen_kernels
  PUBLIC textgen_loader absl::status absl::statusor absl::strings absl::flat_hash_map
  PRIVATE DNNL::dnnl OpenMP::OpenMP_CXX textgen_warnings)
target_compile_options(textgen_kernels PRIVATE -fno-trapping-math)
