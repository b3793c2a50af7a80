# textgen_engine: the batched forward pass driven by an architecture's description, the KV
# cache, weight staging, the engine that owns its threading.
add_library(textgen_engine STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/embedding_pooler.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/engine.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/kv_block_file.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/kv_cache.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/kv_disk_tier.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/prefix_index.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/recurrent_state_pool.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/transformer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/transformer_experts.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/transformer_recurrent.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/transformer_weights.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/weight_staging.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/system_memory.cc
)
target_link_libraries(textgen_engine
  PUBLIC textgen_kernels textgen_loader absl::status absl::statusor absl::strings
         absl::flat_hash_map absl::flat_hash_set absl::str_format
  PRIVATE OpenMP::OpenMP_CXX textgen_warnings PkgConfig::XXHASH)
target_compile_options(textgen_engine PRIVATE -fno-trapping-math)
