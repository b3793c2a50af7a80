# Owned by the tokenizer component; defines textgen_utf8 and textgen_tokenizer.

# Strict UTF-8 checks and repair: a leaf library (no other textgen code) that the CLI links too,
# so it checks user input with the very rules the server applies.
add_library(textgen_utf8 STATIC ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/utf8.cc)
target_link_libraries(textgen_utf8 PUBLIC absl::status PRIVATE absl::str_format textgen_warnings)

add_library(textgen_tokenizer STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/bert_words.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/draft_vocabulary.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/bpe_pre_tokenizer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/gpt2_byte_mapping.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/gpt2_tokenizer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/gpt2_vocab_files.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/incremental_detokenizer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/llama2c_tokenizer_file.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/sentencepiece_tokenizer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/special_token_splitter.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/tokenizer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/vocabulary_tokenizer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/wordpiece_tokenizer.cc
)
target_link_libraries(textgen_tokenizer
  PUBLIC textgen_utf8 absl::status absl::statusor absl::strings absl::str_format absl::flat_hash_map
  PRIVATE PkgConfig::PCRE2 PkgConfig::UTF8PROC nlohmann_json::nlohmann_json textgen_warnings)
