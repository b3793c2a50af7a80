# Owned by the chat component: the Jinja template engine and chat prompt rendering.

# A sandboxed Jinja2 subset for chat templates (no model or server dependencies).
add_library(textgen_jinja STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/call_args.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/filters.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/globals.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/interpreter.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/lexer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/methods.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/operators.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/expression_parser.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/parser.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/python_text.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/template.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/tests.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/jinja/value.cc
)
target_link_libraries(textgen_jinja
  PUBLIC absl::status absl::statusor absl::strings absl::str_format absl::flat_hash_map
  PRIVATE textgen_warnings)

# Conversations -> prompt text (with the untrusted byte ranges) through a model's template.
add_library(textgen_chat STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/chat_output_parser.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/chat_template.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/harmony_reply_parser.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/json_value.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/python_call_reader.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/tool_call_format.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/tool_polyfill.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat/xml_call_reader.cc
)
target_link_libraries(textgen_chat
  PUBLIC textgen_jinja
  PRIVATE nlohmann_json::nlohmann_json textgen_warnings)
