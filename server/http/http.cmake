# textgen_http: the HTTP front end over the transport (server/transport/, Boost.Beast). The
# router and its route table (http_api.cc) are here; each API family has a folder of its own
# (openai/: JSON to the same validated requests the gRPC service makes, and the engine's events
# back to OpenAI's JSON and server-sent events); textgen_routes.cc holds /health and /tokenize.
add_library(textgen_http STATIC
  ${CMAKE_CURRENT_LIST_DIR}/api_error.cc
  ${CMAKE_CURRENT_LIST_DIR}/field_names.cc
  ${CMAKE_CURRENT_LIST_DIR}/http_api.cc
  ${CMAKE_CURRENT_LIST_DIR}/json_fields.cc
  ${CMAKE_CURRENT_LIST_DIR}/router.cc
  ${CMAKE_CURRENT_LIST_DIR}/textgen_routes.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai/embeddings_route.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai/openai_api.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai/openai_field_names.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai/openai_request.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai/openai_response.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai/openai_stream.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai/response_store.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai/responses_request.cc
  ${CMAKE_CURRENT_LIST_DIR}/openai/responses_writer.cc
)
target_link_libraries(textgen_http
  PUBLIC textgen_http_transport textgen_server_core textgen_observability textgen_auth absl::random_random absl::status absl::statusor absl::strings absl::time
         nlohmann_json::nlohmann_json
  PRIVATE Boost::headers Threads::Threads textgen_warnings)
