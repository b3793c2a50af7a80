# Owned by the chat component: tests for textgen_jinja and textgen_chat.

# Renders templates from JSON lines, for the comparison with Python's jinja2.
add_executable(textgen-render-template ${CMAKE_CURRENT_SOURCE_DIR}/tools/render_template_main.cc)
target_link_libraries(textgen-render-template PRIVATE textgen_chat nlohmann_json::nlohmann_json
                      textgen_warnings)

textgen_test(jinja_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/model/chat/jinja_test.cc
  LIBS textgen_chat)

textgen_test(tool_polyfill_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/model/chat/tool_polyfill_test.cc
  LIBS textgen_chat nlohmann_json::nlohmann_json)

# Every semantic case and every chat template in llama.cpp's models/templates, rendered by
# textgen and by Debian's python3-jinja2 configured as Hugging Face does: byte for byte.
add_test(NAME py_chat_templates
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/model/chat/compare_with_jinja2.py
                 ${CMAKE_BINARY_DIR}/bin/textgen-render-template
                 ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp/models/templates
                 --report ${CMAKE_CURRENT_BINARY_DIR}/chat_templates_report.md)
set_tests_properties(py_chat_templates PROPERTIES FIXTURES_REQUIRED llamacpp_source
                     ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300
                     LABELS "python;reference")

# libFuzzer target over the template parser and renderer (clang only). The engine's sources
# are compiled into the fuzzer so they get coverage and sanitizer instrumentation.
if(TEXTGEN_FUZZ)
  get_target_property(jinja_sources textgen_jinja SOURCES)
  get_target_property(chat_sources textgen_chat SOURCES)
  add_executable(textgen-fuzz-jinja ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/jinja_fuzz.cc ${jinja_sources}
                                    ${chat_sources})
  target_compile_options(textgen-fuzz-jinja PRIVATE -fsanitize=fuzzer,address,undefined
                         -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
  target_link_options(textgen-fuzz-jinja PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(textgen-fuzz-jinja PRIVATE nlohmann_json::nlohmann_json absl::status
                        absl::statusor absl::strings absl::str_format absl::flat_hash_map)
endif()

if(TEXTGEN_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
  add_executable(textgen-bench-chat-template ${CMAKE_CURRENT_SOURCE_DIR}/bench/chat_template_bench.cc)
  target_link_libraries(textgen-bench-chat-template PRIVATE textgen_chat benchmark::benchmark
                        textgen_warnings)
endif()

# The reply parser: literal replies, and replies rendered by llama.cpp's templates (needs the
# llamacpp_source fixture: one ctest test).
add_executable(chat_output_parser_test ${CMAKE_CURRENT_SOURCE_DIR}/model/chat/chat_output_parser_test.cc)
target_link_libraries(chat_output_parser_test PRIVATE textgen_chat nlohmann_json::nlohmann_json
                      textgen_warnings GTest::gtest GTest::gtest_main)
add_test(NAME chat_output_parser_test COMMAND chat_output_parser_test)
set_tests_properties(chat_output_parser_test PROPERTIES FIXTURES_REQUIRED llamacpp_source
  ENVIRONMENT "TEXTGEN_LLAMACPP_MODELS_DIR=${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp/models")
