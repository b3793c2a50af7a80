# Owned by the service component: validation, in-process gRPC service and metrics tests.
if(TARGET textgen_service)
  textgen_test(validation_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/validation_test.cc
               LIBS textgen_service)
  textgen_test(service_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/service_test.cc
               LIBS textgen_service)
  textgen_test(service_support_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/support_test.cc
               LIBS textgen_service)
  textgen_test(metrics_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/server/metrics_test.cc
               LIBS textgen_service)
endif()
