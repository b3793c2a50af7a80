# textgen_http: the OpenAI-compatible HTTP front end. http_server is the transport (Boost.Beast,
# asynchronous); openai_* map JSON to the same validated requests the gRPC service makes and
# the engine's events back to OpenAI's JSON and server-sent events.
add_library(textgen_http STATIC
  ${CMAKE_CURRENT_LIST_DIR}/api_error.cc
  ${CMAKE_CURRENT_LIST_DIR}/embeddings_route.cc
  ${CMAKE_CURRENT_LIST_DIR}/json_fields.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai_api.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai_field_names.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai_request.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai_response.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai_stream.cc
  ${CMAKE_CURRENT_LIST_DIR}/response_store.cc
  ${CMAKE_CURRENT_LIST_DIR}/responses_request.cc
  ${CMAKE_CURRENT_LIST_DIR}/responses_writer.cc
  ${CMAKE_CURRENT_LIST_DIR}/tokenize_route.cc
)
target_link_libraries(textgen_http
  PUBLIC textgen_http_transport textgen_server_core textgen_observability textgen_auth absl::random_random absl::status absl::statusor absl::strings absl::time
         nlohmann_json::nlohmann_json
  PRIVATE Boost::headers Threads::Threads textgen_warnings)
