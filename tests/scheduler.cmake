# Owned by the scheduler component: FakeEngine scheduler tests (TSan-clean, no model files)
# and one real-engine exactness test (kept in its own binary: oneDNN/OpenMP are not
# TSan-instrumented).
textgen_test(scheduler_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/scheduler/batching_scheduler_test.cc
          ${CMAKE_CURRENT_SOURCE_DIR}/server/scheduler/stop_matcher_test.cc
          ${CMAKE_CURRENT_SOURCE_DIR}/server/scheduler/session_store_test.cc
          ${CMAKE_CURRENT_SOURCE_DIR}/server/scheduler/prompt_lookup_test.cc
  LIBS textgen_scheduler)
textgen_test(scheduler_real_engine_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/scheduler/scheduler_real_engine_test.cc
          ${CMAKE_CURRENT_SOURCE_DIR}/server/scheduler/draft_model_test.cc
  LIBS textgen_scheduler textgen_random_gguf)

# The HTTP transport with its TLS (no gRPC, no model): also run under ASan and TSan.
add_library(textgen_test_pki STATIC ${CMAKE_CURRENT_SOURCE_DIR}/testing/test_pki.cc)
target_link_libraries(textgen_test_pki PUBLIC OpenSSL::SSL OpenSSL::Crypto
                      PRIVATE textgen_warnings)
textgen_test(http_server_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/transport/http_server_test.cc
                                      ${CMAKE_CURRENT_SOURCE_DIR}/server/transport/http_tls_test.cc
                                      ${CMAKE_CURRENT_SOURCE_DIR}/server/tls/tls_credentials_test.cc
             LIBS textgen_http_transport textgen_tls textgen_test_pki Boost::headers
                  absl::synchronization)

# The pool that prepares requests off the transports' threads (also under TSan).
textgen_test(preparation_pool_test
             SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/core/preparation_pool_test.cc
             LIBS textgen_preparation_pool absl::synchronization)
