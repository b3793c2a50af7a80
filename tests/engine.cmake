# Owned by the engine component: op, KV cache and engine tests.
textgen_test(kv_cache_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/model/kv_cache_test.cc
             LIBS textgen_engine)
