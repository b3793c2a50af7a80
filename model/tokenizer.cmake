# Owned by the tokenizer component; defines textgen_tokenizer.
add_library(textgen_tokenizer STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/llama2c_tokenizer_file.cc
)
target_link_libraries(textgen_tokenizer PUBLIC absl::status absl::statusor absl::strings
                      PRIVATE textgen_warnings)
