# textgen_server_core: what the gRPC and HTTP front ends share between a request and the
# scheduler: validation (one set of rules and messages), chat prompts, metrics, logging and
# the per-request report. No gRPC: the request messages are plain protobuf.
add_library(textgen_server_core STATIC
  ${CMAKE_CURRENT_LIST_DIR}/chat_templates.cc
  ${CMAKE_CURRENT_LIST_DIR}/chat_validation.cc
  ${CMAKE_CURRENT_LIST_DIR}/field_error.cc
  ${CMAKE_CURRENT_LIST_DIR}/logging.cc
  ${CMAKE_CURRENT_LIST_DIR}/metrics.cc
  ${CMAKE_CURRENT_LIST_DIR}/request_report.cc
  ${CMAKE_CURRENT_LIST_DIR}/session_routing.cc
  ${CMAKE_CURRENT_LIST_DIR}/validation.cc
)
target_link_libraries(textgen_server_core
  PUBLIC textgen_preparation_pool textgen_proto textgen_tokenizer textgen_chat textgen_http_transport textgen_tls
         prometheus-cpp::core
         absl::status absl::statusor absl::strings absl::str_format absl::time
         absl::random_random absl::synchronization Threads::Threads
  PRIVATE textgen_warnings)
