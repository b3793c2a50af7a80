# Owned by the sampler component; defines textgen_sampler (logits processors + sampling).
add_library(textgen_sampler STATIC ${CMAKE_CURRENT_SOURCE_DIR}/sampler.cc)
target_link_libraries(textgen_sampler PRIVATE textgen_warnings)
