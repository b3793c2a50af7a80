# textgen_arch: the architectures as data (ArchitectureSpec, the tensor table) and the
# hyperparameters.
add_library(textgen_arch STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/arch/architectures.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/arch/model_config.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/arch/tensor_table.cc
)
target_link_libraries(textgen_arch PUBLIC absl::status absl::statusor absl::strings
                      PRIVATE textgen_warnings)
