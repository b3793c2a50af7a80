# textgen_observability: Prometheus metrics (served over the HTTP transport), the logger and
# the per-request report line. Fed through the scheduler's, the front ends' and the
# preparation pool's observer interfaces; knows no front end.
add_library(textgen_observability STATIC
  ${CMAKE_CURRENT_LIST_DIR}/logging.cc
  ${CMAKE_CURRENT_LIST_DIR}/metrics.cc
  ${CMAKE_CURRENT_LIST_DIR}/request_report.cc
)
target_link_libraries(textgen_observability
  PUBLIC textgen_scheduler textgen_preparation_pool textgen_http_transport textgen_tls
         prometheus-cpp::core absl::status absl::statusor absl::strings absl::str_format
         absl::time absl::synchronization Threads::Threads
  PRIVATE textgen_warnings)
