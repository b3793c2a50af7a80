# libFuzzer targets over what reads untrusted bytes (clang only; the GGUF and chat-template
# fuzzers live with their components). The code under test is compiled into each fuzzer, so it
# gets coverage and sanitizer instrumentation without changing the libraries for the rest of the
# build. Run scripts: tests/fuzz/run_*_fuzz.sh.
if(TEXTGEN_FUZZ)
  set(fuzz_flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                 -fno-omit-frame-pointer -g)
  get_target_property(fuzz_loader_sources textgen_loader SOURCES)
  get_target_property(fuzz_arch_sources textgen_arch SOURCES)
  get_target_property(fuzz_tokenizer_sources textgen_tokenizer SOURCES)
  get_target_property(fuzz_utf8_sources textgen_utf8 SOURCES)
  get_target_property(fuzz_constraint_sources textgen_constraint SOURCES)
  set(fuzz_model_libs absl::status absl::statusor absl::strings absl::str_format
                      absl::flat_hash_map absl::synchronization absl::time PkgConfig::PCRE2
                      PkgConfig::UTF8PROC nlohmann_json::nlohmann_json)
  # Formats and tokenizers, compiled once (instrumented) for every fuzzer below.
  add_library(textgen_fuzz_model OBJECT ${fuzz_loader_sources} ${fuzz_arch_sources}
                                        ${fuzz_tokenizer_sources}
                                        ${fuzz_utf8_sources} ${fuzz_constraint_sources})
  target_compile_options(textgen_fuzz_model PRIVATE -fsanitize=fuzzer-no-link,address,undefined
                         -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
  target_link_libraries(textgen_fuzz_model PRIVATE ${fuzz_model_libs})
  set(fuzz_model_sources $<TARGET_OBJECTS:textgen_fuzz_model>)

  # Every tokenizer family on llama.cpp's test vocabularies: encode, decode, round trip and the
  # incremental detokenizer.
  add_executable(textgen-fuzz-tokenizer ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/tokenizer_fuzz.cc
                                        ${fuzz_model_sources})
  # The llama2.c checkpoint and tokenizer.bin readers.
  add_executable(textgen-fuzz-llama2c ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/llama2c_fuzz.cc
                                      ${fuzz_model_sources})
  # The JSON Schema compiler and the GBNF parser, each followed by a matcher walk.
  add_executable(textgen-fuzz-schema ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/constraint_fuzz.cc
                                     ${fuzz_model_sources})
  target_compile_definitions(textgen-fuzz-schema PRIVATE TEXTGEN_FUZZ_SCHEMA=1)
  add_executable(textgen-fuzz-grammar ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/constraint_fuzz.cc
                                      ${fuzz_model_sources})
  # The chat reply parser (content, reasoning, tool calls), whole against in pieces.
  add_executable(textgen-fuzz-reply ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/chat_output_fuzz.cc
                 ${CMAKE_SOURCE_DIR}/model/chat/chat_output_parser.cc
                 ${CMAKE_SOURCE_DIR}/model/chat/harmony_reply_parser.cc
                 ${CMAKE_SOURCE_DIR}/model/chat/tool_call_format.cc
                 ${CMAKE_SOURCE_DIR}/model/chat/xml_call_reader.cc
                 ${CMAKE_SOURCE_DIR}/model/chat/python_call_reader.cc)
  target_link_libraries(textgen-fuzz-reply PRIVATE nlohmann_json::nlohmann_json)
  # KV block files read back from --kv-cache-dir (which replicas share: untrusted).
  add_executable(textgen-fuzz-kvblock ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/kv_block_fuzz.cc
                 ${CMAKE_SOURCE_DIR}/model/runtime/kv_block_file.cc
                 ${CMAKE_SOURCE_DIR}/model/runtime/kv_disk_tier.cc
                 ${CMAKE_SOURCE_DIR}/model/runtime/prefix_index.cc)
  target_link_libraries(textgen-fuzz-kvblock PRIVATE PkgConfig::XXHASH absl::flat_hash_set)
  set(fuzz_targets textgen-fuzz-tokenizer textgen-fuzz-llama2c textgen-fuzz-schema
                   textgen-fuzz-grammar textgen-fuzz-reply textgen-fuzz-kvblock)

  # Request validation from raw protobuf bytes (needs the generated messages).
  if(TARGET textgen_proto)
    get_target_property(fuzz_jinja_sources textgen_jinja SOURCES)
    get_target_property(fuzz_chat_sources textgen_chat SOURCES)
    add_executable(textgen-fuzz-request ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/request_fuzz.cc
                   ${CMAKE_SOURCE_DIR}/server/core/validation.cc
                   ${CMAKE_SOURCE_DIR}/server/core/chat_validation.cc
                   ${CMAKE_SOURCE_DIR}/server/core/harmony_framing.cc
                   ${CMAKE_SOURCE_DIR}/server/core/tool_plan.cc
                   ${CMAKE_SOURCE_DIR}/server/core/embedding.cc
                   ${CMAKE_SOURCE_DIR}/server/http/api_error.cc
                   ${CMAKE_SOURCE_DIR}/server/http/json_fields.cc
                   ${CMAKE_SOURCE_DIR}/server/http/openai/openai_request.cc
                   ${CMAKE_SOURCE_DIR}/server/http/openai/responses_request.cc
                   ${fuzz_jinja_sources} ${fuzz_chat_sources} ${fuzz_model_sources})
    target_link_libraries(textgen-fuzz-request PRIVATE textgen_proto absl::random_random
                          absl::time nlohmann_json::nlohmann_json)
    list(APPEND fuzz_targets textgen-fuzz-request)
  endif()

  foreach(target ${fuzz_targets})
    target_compile_options(${target} PRIVATE ${fuzz_flags})
    target_link_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${target} PRIVATE ${fuzz_model_libs})
    target_compile_definitions(${target} PRIVATE TEXTGEN_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  endforeach()
endif()
