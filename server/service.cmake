# textgen_service: the gRPC service, Generate/Chat reactor, validation, chat templates, metrics,
# logging and drain
# (no model code: it talks to the Scheduler and Tokenizer interfaces only).
add_library(textgen_service STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/chat_templates.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/chat_validation.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/drain.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/generate_reactor.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/logging.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/metrics.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/request_report.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/server_options.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/service.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/status_mapping.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/validation.cc
)
target_link_libraries(textgen_service
  PUBLIC textgen_proto textgen_tokenizer textgen_chat gRPC::grpc++ prometheus-cpp::pull prometheus-cpp::core absl::status
         absl::statusor absl::strings absl::str_format absl::time absl::random_random
         absl::synchronization Threads::Threads
  PRIVATE textgen_warnings)

# textgen-server: flags and wiring.
add_executable(textgen-server ${CMAKE_CURRENT_SOURCE_DIR}/main.cc
                              ${CMAKE_CURRENT_SOURCE_DIR}/model_info.cc)
target_link_libraries(textgen-server PRIVATE textgen_http textgen_service textgen_scheduler textgen_model
                      gRPC::grpc++_reflection absl::flags absl::flags_parse absl::flags_usage
                      textgen_warnings)
