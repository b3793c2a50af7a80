# Owned by the tokenizer component: tests for textgen_tokenizer.
textgen_test(tokenizer_test
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/model/llama2c_tokenizer_file_test.cc
  LIBS textgen_tokenizer)
