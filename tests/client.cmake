# Owned by the client component: the textgen CLI (flag parsing, bench statistics and report,
# every subcommand against an in-process fake server).
if(TARGET textgen_client_lib)
  textgen_test(client_test
               SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/client/bench_report_test.cc
                       ${CMAKE_CURRENT_SOURCE_DIR}/client/bench_stats_test.cc
                       ${CMAKE_CURRENT_SOURCE_DIR}/client/cli_test.cc
                       ${CMAKE_CURRENT_SOURCE_DIR}/client/flag_parser_test.cc
               LIBS textgen_client_lib)
endif()
