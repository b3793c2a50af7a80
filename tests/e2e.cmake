# Owned by the service component: end-to-end tests against the real textgen-server binary on
# stories260K (C++ gRPC client, Python grpcio client, Node @grpc/grpc-js client). Each reports
# itself skipped when ../shared/models/stories260K is absent.
if(TARGET textgen-server)
  textgen_test(grpc_e2e_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/e2e/grpc_e2e_test.cc
               LIBS textgen_proto gRPC::grpc++)
  target_compile_definitions(grpc_e2e_test PRIVATE
                             TEXTGEN_SERVER_BIN="$<TARGET_FILE:textgen-server>"
                             TEXTGEN_MAKE_GGUF_BIN="$<TARGET_FILE:textgen-make-random-gguf>")
  add_dependencies(grpc_e2e_test textgen-server textgen-make-random-gguf)

  # Faults: a client gone during a long prefill, SIGTERM in a 64-stream burst, a KV budget full
  # of idle sessions (a random-weight model made at test time).
  textgen_test(fault_e2e_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/e2e/fault_e2e_test.cc
               LIBS textgen_proto gRPC::grpc++ absl::strings absl::time)
  target_compile_definitions(fault_e2e_test PRIVATE
                             TEXTGEN_SERVER_BIN="$<TARGET_FILE:textgen-server>"
                             TEXTGEN_MAKE_GGUF_BIN="$<TARGET_FILE:textgen-make-random-gguf>")
  add_dependencies(fault_e2e_test textgen-server textgen-make-random-gguf)

  # Mutual TLS on every listener, with the real CLI (bundled model: no ../shared needed).
  textgen_test(tls_e2e_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/e2e/tls_e2e_test.cc
               LIBS textgen_test_pki Boost::headers nlohmann_json::nlohmann_json absl::strings)
  target_compile_definitions(tls_e2e_test PRIVATE
                             TEXTGEN_SERVER_BIN="$<TARGET_FILE:textgen-server>"
                             TEXTGEN_CLI_BIN="$<TARGET_FILE:textgen>")
  add_dependencies(tls_e2e_test textgen-server textgen)

  add_test(NAME e2e_python_client
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/e2e/python_client_test.py
                   --server $<TARGET_FILE:textgen-server> --proto-root ${CMAKE_SOURCE_DIR}/proto
                   --shared ${TEXTGEN_SHARED_DIR} --work ${CMAKE_CURRENT_BINARY_DIR}/e2e-python)
  add_test(NAME e2e_node_client
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/e2e/run_node_client_test.sh
                   $<TARGET_FILE:textgen-server> ${CMAKE_SOURCE_DIR}/proto ${TEXTGEN_SHARED_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/e2e-node)
  set_tests_properties(e2e_python_client e2e_node_client PROPERTIES SKIP_RETURN_CODE 77
                       TIMEOUT 300 LABELS e2e)

  # The OpenAI-compatible HTTP API with the official `openai` npm client, on the bundled model.
  add_test(NAME e2e_openai_client
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/e2e/run_openai_client_test.sh
                   $<TARGET_FILE:textgen-server> $<TARGET_FILE:textgen>
                   ${CMAKE_SOURCE_DIR}/models/default.gguf ${CMAKE_CURRENT_BINARY_DIR}/e2e-openai)
  set_tests_properties(e2e_openai_client PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS e2e)

  # Structured output with the `openai` npm client and ajv, on random-weight Qwen 2.5 and
  # Llama 3.1 layouts with their real vocabularies and templates (llama.cpp's source).
  add_test(NAME e2e_structured_output
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/e2e/run_structured_output_test.sh
                   $<TARGET_FILE:textgen-server> $<TARGET_FILE:textgen-make-random-gguf>
                   ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp
                   ${CMAKE_CURRENT_BINARY_DIR}/e2e-structured)
  set_tests_properties(e2e_structured_output PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       LABELS e2e FIXTURES_REQUIRED llamacpp_source)

  # Tool calls with the `openai` npm client (calls, streams, runTools) and ajv, on random-weight
  # Qwen 2.5, Qwen 3, Qwen3.5, Llama 3.1, Mistral-Nemo, Phi-4-mini, gpt-oss and LFM2.5 layouts with their
  # vocabularies and templates (Phi-4-mini's from the @huggingface/ollama-utils npm package).
  add_test(NAME e2e_tool_calls
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/e2e/run_tool_calls_test.sh
                   $<TARGET_FILE:textgen-server> $<TARGET_FILE:textgen-make-random-gguf>
                   ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp
                   ${CMAKE_CURRENT_BINARY_DIR}/e2e-tools)
  set_tests_properties(e2e_tool_calls PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
                       LABELS e2e FIXTURES_REQUIRED llamacpp_source)

  # The Responses API with the `openai` npm client (create, stream, retrieve, delete, function
  # tools round-tripping through previous_response_id and statelessly, text.format) and ajv.
  add_test(NAME e2e_responses
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/e2e/run_responses_test.sh
                   $<TARGET_FILE:textgen-server> $<TARGET_FILE:textgen-make-random-gguf>
                   ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp
                   ${CMAKE_CURRENT_BINARY_DIR}/e2e-responses)
  set_tests_properties(e2e_responses PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       LABELS e2e FIXTURES_REQUIRED llamacpp_source)

  # The OpenAI Agents SDK (Responses and Chat Completions), LangChain.js and the Vercel AI SDK
  # running their tool loops and structured outputs against the server.
  add_test(NAME e2e_frameworks
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/e2e/run_frameworks_test.sh
                   $<TARGET_FILE:textgen-server> $<TARGET_FILE:textgen-make-random-gguf>
                   ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp
                   ${CMAKE_CURRENT_BINARY_DIR}/e2e-frameworks)
  set_tests_properties(e2e_frameworks PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       LABELS e2e FIXTURES_REQUIRED llamacpp_source)

  # Three replicas behind Debian's nginx with deploy/nginx/textgen-lb.conf: session affinity,
  # failover of a SIGTERMed replica, and Prometheus / Grafana / alert queries against them.
  # (LB=haproxy runs it behind HAProxy; not here: see deploy/haproxy/haproxy.cfg.)
  # The deployment files, offline: Kubernetes manifests, compose, nginx, Envoy, Prometheus
  # agree with each other, with the image and with textgen-server --help.
  add_test(NAME deploy_manifests
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/deploy/check_manifests.py
                   --server $<TARGET_FILE:textgen-server> --repo ${CMAKE_SOURCE_DIR})
  set_tests_properties(deploy_manifests PROPERTIES TIMEOUT 60)

  add_test(NAME e2e_scale_out COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/test-scale-out.sh)
  set_tests_properties(e2e_scale_out PROPERTIES TIMEOUT 300 LABELS e2e RUN_SERIAL ON
    ENVIRONMENT "LB=nginx;BUILD=${CMAKE_BINARY_DIR};OUT=${CMAKE_CURRENT_BINARY_DIR}/scale_out.json")
endif()

# The Chat RPC end to end: real vocabularies and chat templates from llama.cpp's source on
# random weights, rendering vs python3-jinja2, control-token injection, session reuse over 10
# turns (table in chat_sessions.md), and a model without a template.
if(TARGET textgen-server)
  add_test(NAME e2e_chat
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/e2e/chat_e2e_test.py
                   --server $<TARGET_FILE:textgen-server>
                   --make-gguf $<TARGET_FILE:textgen-make-random-gguf>
                   --proto-root ${CMAKE_SOURCE_DIR}/proto
                   --llamacpp ${TEXTGEN_LLAMACPP_REFERENCE_DIR}/llama.cpp
                   --shared ${TEXTGEN_SHARED_DIR} --work ${CMAKE_CURRENT_BINARY_DIR}/e2e-chat
                   --report ${CMAKE_CURRENT_BINARY_DIR}/chat_sessions.md)
  set_tests_properties(e2e_chat PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "e2e;reference"
                       FIXTURES_REQUIRED llamacpp_source ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()
