# Owned by the service component: validation, in-process gRPC service and metrics tests.
if(TARGET textgen_service)
  textgen_test(validation_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/core/validation_test.cc
                                       ${CMAKE_CURRENT_SOURCE_DIR}/server/core/admission_test.cc
               LIBS textgen_service)
  textgen_test(tokenize_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/core/tokenize_test.cc
               LIBS textgen_service)
  textgen_test(tool_plan_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/core/tool_plan_test.cc
               LIBS textgen_service)
  textgen_test(event_outbox_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/core/event_outbox_test.cc
               LIBS textgen_server_core)
  textgen_test(service_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/grpc/service_test.cc
               LIBS textgen_service textgen_test_pki)
  textgen_test(service_support_test
               SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/grpc/status_mapping_test.cc
                       ${CMAKE_CURRENT_SOURCE_DIR}/server/server_options_test.cc
                       ${CMAKE_CURRENT_SOURCE_DIR}/server/observability/logging_test.cc
                       ${CMAKE_CURRENT_SOURCE_DIR}/server/observability/request_report_test.cc
               LIBS textgen_service textgen_server_options)
  textgen_test(openai_request_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/http/openai/openai_request_test.cc
               LIBS textgen_http textgen_service)
  textgen_test(responses_api_test
               SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/http/openai/responses_request_test.cc
                       ${CMAKE_CURRENT_SOURCE_DIR}/server/http/openai/responses_writer_test.cc
                       ${CMAKE_CURRENT_SOURCE_DIR}/server/http/openai/response_store_test.cc
               LIBS textgen_http textgen_service nlohmann_json::nlohmann_json)
  textgen_test(http_api_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/http/http_api_test.cc
                                     ${CMAKE_CURRENT_SOURCE_DIR}/server/http/router_test.cc
               LIBS textgen_http textgen_service Boost::headers nlohmann_json::nlohmann_json)
  textgen_test(api_keys_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/auth/api_keys_test.cc
                                     ${CMAKE_CURRENT_SOURCE_DIR}/server/auth/auth_policy_test.cc
               LIBS textgen_auth)
  textgen_test(metrics_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/observability/metrics_test.cc
               LIBS textgen_service textgen_test_pki Boost::headers)
endif()
