# Owned by the constraint component: tests for textgen_constraint (grammars, regex, GBNF,
# JSON Schema, token masks).
textgen_test(constraint_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/model/constraint/constraint_test.cc
  LIBS textgen_constraint absl::strings)

if(TEXTGEN_BUILD_BENCH)
  add_executable(textgen-bench-constraint ${CMAKE_CURRENT_SOURCE_DIR}/bench/constraint_bench.cc)
  target_link_libraries(textgen-bench-constraint PRIVATE textgen_constraint textgen_loader
                        textgen_warnings)
endif()

# Debian's json-schema-test-suite (installed by scripts/install-deps.sh).
textgen_test(json_schema_suite_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/model/constraint/json_schema_suite_test.cc
  LIBS textgen_constraint absl::strings nlohmann_json::nlohmann_json)

# Masks on llama.cpp's real vocabularies (needs the llamacpp_source fixture: one ctest test).
add_executable(vocab_mask_test ${CMAKE_CURRENT_SOURCE_DIR}/model/constraint/vocab_mask_test.cc)
target_link_libraries(vocab_mask_test PRIVATE textgen_constraint textgen_loader textgen_warnings
                      GTest::gtest GTest::gtest_main)
add_test(NAME vocab_mask_test COMMAND vocab_mask_test)
set_tests_properties(vocab_mask_test PROPERTIES FIXTURES_REQUIRED llamacpp_source TIMEOUT 300
  ENVIRONMENT "TEXTGEN_LLAMACPP_MODELS_DIR=${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp/models")
