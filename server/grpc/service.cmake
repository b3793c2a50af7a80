# textgen_service: the gRPC front end: the service, the Generate/Chat reactor, status mapping
# and drain (no model code: it talks to the Scheduler and Tokenizer interfaces only).
add_library(textgen_service STATIC
  ${CMAKE_CURRENT_LIST_DIR}/drain.cc
  ${CMAKE_CURRENT_LIST_DIR}/embed_reactor.cc
  ${CMAKE_CURRENT_LIST_DIR}/generate_reactor.cc
  ${CMAKE_CURRENT_LIST_DIR}/service.cc
  ${CMAKE_CURRENT_LIST_DIR}/status_mapping.cc
)
target_link_libraries(textgen_service
  PUBLIC textgen_server_core textgen_observability textgen_auth gRPC::grpc++ absl::status absl::statusor absl::strings
         absl::str_format absl::time absl::synchronization Threads::Threads
  PRIVATE textgen_warnings)
