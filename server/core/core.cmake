# textgen_server_core: what the gRPC and HTTP front ends share between a request and the
# scheduler: validation (one set of rules and messages, each error naming its field, and the
# session routing header's check), chat prompts. No gRPC: the request messages are plain protobuf.
add_library(textgen_server_core STATIC
  ${CMAKE_CURRENT_LIST_DIR}/chat_validation.cc
  ${CMAKE_CURRENT_LIST_DIR}/embedding.cc
  ${CMAKE_CURRENT_LIST_DIR}/event_outbox.cc
  ${CMAKE_CURRENT_LIST_DIR}/tokenize.cc
  ${CMAKE_CURRENT_LIST_DIR}/harmony_framing.cc
  ${CMAKE_CURRENT_LIST_DIR}/model_name.cc
  ${CMAKE_CURRENT_LIST_DIR}/model_rules.cc
  ${CMAKE_CURRENT_LIST_DIR}/tool_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/validation.cc
)
target_link_libraries(textgen_server_core
  PUBLIC textgen_scheduler textgen_preparation_pool textgen_proto textgen_tokenizer textgen_chat
         absl::status absl::statusor absl::strings absl::str_format absl::time
         absl::random_random
  PRIVATE nlohmann_json::nlohmann_json textgen_warnings)
