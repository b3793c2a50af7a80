# textgen_constraint: structured output. JSON Schema, regex and GBNF compiled to byte
# grammars; per-sequence matchers that turn a grammar state into a token mask.
add_library(textgen_constraint STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/char_class.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/constraint.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/gbnf.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/grammar.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/grammar_matcher.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/json_schema.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/json_schema_compiler.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/json_schema_containers.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/json_schema_values.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/json_schema_arguments.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/regex.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/constraint/token_trie.cc
)
target_link_libraries(textgen_constraint PUBLIC textgen_tokenizer absl::status absl::statusor
                      absl::strings absl::flat_hash_map absl::synchronization absl::time
                      PRIVATE nlohmann_json::nlohmann_json textgen_warnings)
