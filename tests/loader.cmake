# Owned by the loader component: tests for textgen_loader, the random-GGUF tool, the GGUF fuzzer.

# Random-weights GGUF models in real shapes (tool + tests).
add_library(textgen_random_gguf STATIC ${CMAKE_CURRENT_SOURCE_DIR}/tools/random_gguf.cc
                                      ${CMAKE_CURRENT_SOURCE_DIR}/tools/quant_mix.cc)
target_link_libraries(textgen_random_gguf PUBLIC textgen_loader textgen_tokenizer
                      PRIVATE textgen_warnings)
add_executable(textgen-make-random-gguf ${CMAKE_CURRENT_SOURCE_DIR}/tools/make_random_gguf.cc)
target_link_libraries(textgen-make-random-gguf PRIVATE textgen_random_gguf textgen_warnings)

textgen_test(loader_test
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/model/arch/tensor_table_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/format/gguf_model_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/format/gguf_reader_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/format/gguf_writer_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/format/llama2c_loader_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/format/loader_tofloat_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/format/model_loader_test.cc
  LIBS textgen_loader textgen_random_gguf)

# libFuzzer target over the GGUF reader and model builders (clang only). The loader sources are
# compiled into the fuzzer itself so they get coverage and sanitizer instrumentation without
# changing textgen_loader for the rest of the build.
if(TEXTGEN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TEXTGEN_FUZZ needs clang: -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang")
  endif()
  get_target_property(loader_sources textgen_loader SOURCES)
  get_target_property(arch_sources textgen_arch SOURCES)
  add_executable(textgen-fuzz-gguf ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/gguf_fuzz.cc ${loader_sources}
                                   ${arch_sources})
  target_compile_options(textgen-fuzz-gguf PRIVATE -fsanitize=fuzzer,address,undefined
                         -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
  target_link_options(textgen-fuzz-gguf PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(textgen-fuzz-gguf PRIVATE textgen_tokenizer absl::status absl::statusor
                        absl::strings)
endif()
