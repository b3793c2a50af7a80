# Owned by the tokenizer component: tests for textgen_tokenizer.
textgen_test(tokenizer_test
  SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/model/tokenizer/bpe_pre_tokenizer_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/tokenizer/draft_vocabulary_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/tokenizer/llama2c_tokenizer_file_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/tokenizer/tokenizer_test.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/model/tokenizer/utf8_test.cc
  LIBS textgen_tokenizer)

# Exact-id comparison against reference tools (python sentencepiece, npm gpt-3-encoder). The
# fixture generates the expected ids inside the test run; the comparison requires it, so it
# is one ctest test (not gtest-discovered) carrying FIXTURES_REQUIRED.
set(TEXTGEN_TOKENIZER_REFERENCE_DIR "${CMAKE_BINARY_DIR}/tokenizer_reference")
add_executable(tokenizer_reference_test ${CMAKE_CURRENT_SOURCE_DIR}/model/tokenizer/tokenizer_reference_test.cc)
target_link_libraries(tokenizer_reference_test PRIVATE textgen_tokenizer nlohmann_json::nlohmann_json
                      textgen_warnings GTest::gtest GTest::gtest_main)
target_compile_definitions(tokenizer_reference_test PRIVATE
                           TEXTGEN_SHARED_DIR="${TEXTGEN_SHARED_DIR}"
                           TEXTGEN_TOKENIZER_REFERENCE_DIR="${TEXTGEN_TOKENIZER_REFERENCE_DIR}")
add_test(NAME tokenizer_reference_setup
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/reference/make_reference_ids.sh
                 ${TEXTGEN_TOKENIZER_REFERENCE_DIR} ${TEXTGEN_SHARED_DIR})
set_tests_properties(tokenizer_reference_setup PROPERTIES FIXTURES_SETUP tokenizer_reference
                     TIMEOUT 300)
add_test(NAME tokenizer_reference_ids COMMAND tokenizer_reference_test)
set_tests_properties(tokenizer_reference_ids PROPERTIES FIXTURES_REQUIRED tokenizer_reference
                     ENVIRONMENT "TEXTGEN_SHARED_DIR=${TEXTGEN_SHARED_DIR};TEXTGEN_TOKENIZER_REFERENCE_DIR=${TEXTGEN_TOKENIZER_REFERENCE_DIR}")

# CLI for comparisons with reference tools and one-off throughput measurements.
add_executable(textgen-tokenize ${CMAKE_CURRENT_SOURCE_DIR}/tools/tokenize_main.cc)
target_link_libraries(textgen-tokenize PRIVATE textgen_loader textgen_tokenizer textgen_warnings)
