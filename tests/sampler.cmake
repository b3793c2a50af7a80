# Owned by the sampler component: sampler unit tests and the Python converter/reference tests.
textgen_test(sampler_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/model/runtime/sampler_test.cc
             LIBS textgen_sampler)
