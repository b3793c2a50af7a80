# Owned by the engine component; defines textgen_engine (oneDNN forward pass + KV cache).
# Only model/ops/* include dnnl.hpp.
add_library(textgen_engine STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/kv_cache.cc
)
target_link_libraries(textgen_engine PUBLIC absl::status absl::statusor absl::strings
                      absl::flat_hash_map PRIVATE textgen_warnings)
