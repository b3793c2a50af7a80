# Owned by the loader component; defines textgen_loader.
# GGUF / llama2.c readers, weight views and the GGUF writer (tests and tools).
add_library(textgen_loader STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/arch/architectures.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/block_formats.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/gguf_model.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/gguf_reader.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/gguf_tokenizer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/gguf_writer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/llama2c_loader.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/mapped_file.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/arch/model_config.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/model_loader.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/weights.cc
)
target_link_libraries(textgen_loader PUBLIC absl::status absl::statusor absl::strings
                      textgen_tokenizer PRIVATE textgen_warnings)
# Dequantization must round exactly as ggml / gguf-py do: no fused multiply-adds, whatever
# -march a packager adds.
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/format/block_formats.cc PROPERTIES
                            COMPILE_OPTIONS -ffp-contract=off)
