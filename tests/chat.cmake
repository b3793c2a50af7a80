# Owned by the chat component: tests for textgen_jinja and textgen_chat.

# Renders templates from JSON lines, for the comparison with Python's jinja2.
add_executable(textgen-render-template ${CMAKE_CURRENT_SOURCE_DIR}/tools/render_template_main.cc)
target_link_libraries(textgen-render-template PRIVATE textgen_chat nlohmann_json::nlohmann_json
                      textgen_warnings)

textgen_test(jinja_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja_test.cc
  LIBS textgen_chat)

# Every semantic case and every chat template in llama.cpp's models/templates, rendered by
# textgen and by Debian's python3-jinja2 configured as Hugging Face does: byte for byte.
add_test(NAME py_chat_templates
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/chat/compare_with_jinja2.py
                 ${CMAKE_BINARY_DIR}/bin/textgen-render-template
                 ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp/models/templates
                 --report ${CMAKE_CURRENT_BINARY_DIR}/chat_templates_report.md)
set_tests_properties(py_chat_templates PROPERTIES FIXTURES_REQUIRED llamacpp_source
                     ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" TIMEOUT 300
                     LABELS "python;reference")
