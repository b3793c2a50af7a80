# Owned by the scheduler component; defines textgen_scheduler (continuous batching, sessions,
# admission control). Needs no gRPC, so it also builds with TEXTGEN_BUILD_SERVER=OFF.
add_library(textgen_scheduler STATIC
  ${CMAKE_CURRENT_LIST_DIR}/batching_scheduler.cc
  ${CMAKE_CURRENT_LIST_DIR}/draft_model.cc
  ${CMAKE_CURRENT_LIST_DIR}/prompt_lookup.cc
  ${CMAKE_CURRENT_LIST_DIR}/request_inbox.cc
  ${CMAKE_CURRENT_LIST_DIR}/sequence.cc
  ${CMAKE_CURRENT_LIST_DIR}/session_store.cc
  ${CMAKE_CURRENT_LIST_DIR}/stop_matcher.cc
)
target_link_libraries(textgen_scheduler
  PUBLIC textgen_model absl::status absl::statusor absl::strings absl::time absl::synchronization
         absl::flat_hash_map absl::flat_hash_set Threads::Threads
  PRIVATE textgen_warnings)
