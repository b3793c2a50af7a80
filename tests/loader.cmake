# Owned by the loader component: tests for textgen_loader, the random-GGUF tool, the GGUF fuzzer.
textgen_test(loader_test
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/model/model_loader_test.cc
  LIBS textgen_loader)
