# Owned by the engine component: op, KV cache and engine tests.
textgen_test(kv_cache_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/model/runtime/kv_cache_test.cc
                                   ${CMAKE_CURRENT_SOURCE_DIR}/model/runtime/kv_cache_prefix_test.cc
                                   ${CMAKE_CURRENT_SOURCE_DIR}/model/runtime/kv_cache_recurrent_test.cc
                                   ${CMAKE_CURRENT_SOURCE_DIR}/model/runtime/kv_disk_tier_test.cc
             LIBS textgen_engine)
textgen_test(ops_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/model/kernels/ops_test.cc
                              ${CMAKE_CURRENT_SOURCE_DIR}/model/kernels/expert_routing_test.cc
             LIBS textgen_engine)

add_executable(textgen-dump-logits ${CMAKE_CURRENT_SOURCE_DIR}/tools/dump_logits.cc)
target_link_libraries(textgen-dump-logits PRIVATE textgen_engine textgen_loader textgen_warnings)
textgen_test(engine_test
             SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/model/runtime/engine_test.cc
                     ${CMAKE_CURRENT_SOURCE_DIR}/model/runtime/engine_synthetic_test.cc
             LIBS textgen_engine textgen_loader textgen_random_gguf)

if(TEXTGEN_BUILD_BENCH)
  # The DRAM read probe both benchmarks measure the read limit with.
  add_library(textgen_read_probe STATIC ${CMAKE_CURRENT_SOURCE_DIR}/bench/read_probe.cc)
  target_link_libraries(textgen_read_probe PUBLIC textgen_engine PRIVATE textgen_warnings)
  add_executable(textgen-bench-engine ${CMAKE_CURRENT_SOURCE_DIR}/bench/engine_bench.cc)
  target_link_libraries(textgen-bench-engine PRIVATE textgen_engine textgen_loader
                        textgen_read_probe textgen_warnings)
  find_package(benchmark CONFIG REQUIRED)
  add_executable(textgen-bench-matmul ${CMAKE_CURRENT_SOURCE_DIR}/bench/matmul_bench.cc)
  target_link_libraries(textgen-bench-matmul PRIVATE textgen_engine benchmark::benchmark
                        textgen_warnings)
  add_executable(textgen-bench-quant-matmul ${CMAKE_CURRENT_SOURCE_DIR}/bench/quant_matmul_bench.cc)
  target_link_libraries(textgen-bench-quant-matmul PRIVATE textgen_engine OpenMP::OpenMP_CXX
                        DNNL::dnnl textgen_read_probe benchmark::benchmark textgen_warnings)
  add_executable(textgen-bench-vnni-ports ${CMAKE_CURRENT_SOURCE_DIR}/bench/vnni_ports_bench.cc)
  target_link_libraries(textgen-bench-vnni-ports PRIVATE textgen_kernels benchmark::benchmark
                        textgen_warnings)
  add_executable(textgen-bench-attention ${CMAKE_CURRENT_SOURCE_DIR}/bench/attention_bench.cc)
  target_link_libraries(textgen-bench-attention PRIVATE textgen_engine DNNL::dnnl
                        benchmark::benchmark textgen_warnings)
endif()
find_package(OpenMP REQUIRED)
textgen_test(quant_matmul_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/model/kernels/quant_matmul_test.cc
             LIBS textgen_engine OpenMP::OpenMP_CXX)
