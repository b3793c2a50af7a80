# Owned by the loader component: tests for textgen_loader, the random-GGUF tool, the GGUF fuzzer.

# Random-weights GGUF models in real shapes (tool + tests).
add_library(textgen_random_gguf STATIC ${CMAKE_CURRENT_SOURCE_DIR}/tools/random_gguf.cc)
target_link_libraries(textgen_random_gguf PUBLIC textgen_loader textgen_tokenizer
                      PRIVATE textgen_warnings)
add_executable(textgen-make-random-gguf ${CMAKE_CURRENT_SOURCE_DIR}/tools/make_random_gguf.cc)
target_link_libraries(textgen-make-random-gguf PRIVATE textgen_random_gguf textgen_warnings)

textgen_test(loader_test
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/model/gguf_model_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/gguf_reader_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/gguf_writer_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/llama2c_loader_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/loader_tofloat_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/model_loader_test.cc
  LIBS textgen_loader textgen_random_gguf)
