# textgen_loader: GGUF and llama2.c readers, tensor block formats, the mapped file and weight
# views, the GGUF writer.
add_library(textgen_loader STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/format/block_formats.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/gguf_model.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/gguf_reader.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/gguf_tokenizer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/gguf_writer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/llama2c_loader.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/mapped_file.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/model_loader.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/format/weights.cc
)
target_link_libraries(textgen_loader PUBLIC textgen_arch textgen_tokenizer absl::status
                      absl::statusor absl::strings PRIVATE textgen_warnings)
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/format/block_formats.cc PROPERTIES
                            COMPILE_OPTIONS -ffp-contract=off)
