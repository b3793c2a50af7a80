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
