#!/usr/bin/python3
"""End-to-end test of textgen-server from Python (Debian python3-grpcio).

Generates the Python stubs from proto/textgen/v1/textgen.proto into a scratch directory,
starts the real server binary on stories260K on a free loopback port, streams a greedy
generation and checks it against the reference in shared/models/stories260K/PROVENANCE.md,
then checks that temperature -1 is INVALID_ARGUMENT, that health says SERVING, that server
reflection lists the service, structured output (a JSON Schema constraint whose finished
answers Debian's python3-jsonschema validates, a regex, a refused keyword), and that SIGTERM
exits 0.
Exit code 77 = skipped (model not found), which ctest reports as skipped.

Usage: python_client_test.py --server BIN --proto-root DIR --shared DIR --work DIR
"""
import argparse
import json
import os
import re
import signal
import sys

import jsonschema

from server_harness import generate_stubs, start_server

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from shared_files import SKIP, require_shared_file  # noqa: E402  (one rule for ../shared)

REFERENCE_TEXT = (", there was a little girl named Lily. She loved to play outside in the park. "
                  "One day, she saw a big, red ball. She wanted to play with it,")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--proto-root", required=True)
    parser.add_argument("--shared", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    model = os.path.join(args.shared, "models/stories260K/stories260K.gguf")
    if not require_shared_file(model, args.shared):
        return SKIP

    generate_stubs(args.proto_root, args.work)
    import grpc
    from textgen.v1 import textgen_pb2, textgen_pb2_grpc

    process, port = start_server(args.server, model)
    try:
        # --- snippet used in docs/clients.md ---
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = textgen_pb2_grpc.TextGenerationStub(channel)
        request = textgen_pb2.GenerateRequest(
            text="Once upon a time",
            sampling=textgen_pb2.SamplingParameters(temperature=0.0),
            stopping=textgen_pb2.StoppingCriteria(max_new_tokens=48))
        text, finished = "", None
        for response in stub.Generate(request, timeout=60):
            text += response.text
            if response.HasField("finished"):
                finished = response.finished
        # --- end of snippet ---
        assert text == REFERENCE_TEXT, f"generated {text!r}, expected {REFERENCE_TEXT!r}"
        assert finished is not None and finished.reason == textgen_pb2.FINISH_REASON_LENGTH, finished
        assert finished.usage.completion_tokens == 48, finished.usage

        bad = textgen_pb2.GenerateRequest(
            text="Once upon a time", sampling=textgen_pb2.SamplingParameters(temperature=-1.0))
        try:
            list(stub.Generate(bad, timeout=30))
            raise AssertionError("temperature -1 was accepted")
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
            assert "temperature" in error.details(), error.details()

        # Standard health service (raw bytes: empty request; response field 1 = 1 SERVING).
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        assert check(b"", timeout=10) == b"\x08\x01", "health is not SERVING"
        # Server reflection lists the service (request: list_services = "", field 7).
        reflect = channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        replies = list(reflect(iter([b"\x3a\x00"]), timeout=10))
        assert any(b"textgen.v1.TextGeneration" in r for r in replies), replies
        channel.close()

        # --- snippet used in docs/clients.md (sessions behind a load balancer) ---
        retry_policy = json.dumps({"methodConfig": [{
            "name": [{"service": "textgen.v1.TextGeneration"}],
            "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.25s", "maxBackoff": "2s",
                            "backoffMultiplier": 2,
                            "retryableStatusCodes": ["UNAVAILABLE", "CANCELLED"]}}]})
        channel = grpc.insecure_channel(f"127.0.0.1:{port}",
                                        options=[("grpc.service_config", retry_policy)])
        stub = textgen_pb2_grpc.TextGenerationStub(channel)
        session, prompt = "conversation-42", "Once upon a time"
        for _ in range(2):
            request = textgen_pb2.GenerateRequest(
                text=prompt, session_id=session,
                stopping=textgen_pb2.StoppingCriteria(max_new_tokens=16))
            # The balancer keeps the session on one replica by this header.
            responses = list(stub.Generate(request, metadata=(("x-session-id", session),),
                                           timeout=60))
            prompt += "".join(r.text for r in responses) + " Then"
        # --- end of snippet ---
        usage = responses[-1].finished.usage
        assert usage.cached_tokens > 0, f"the second turn reused nothing: {usage}"
        try:
            list(stub.Generate(request, metadata=(("x-session-id", "another"),), timeout=30))
            raise AssertionError("a header naming another session was accepted")
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
            assert "x-session-id" in error.details(), error.details()
        channel.close()

        # Structured output: every answer that ends by itself is valid.
        stub = textgen_pb2_grpc.TextGenerationStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        schema = {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 10},
            "age": {"type": "integer", "minimum": 1, "maximum": 99},
            "pet": {"enum": ["cat", "dog"]}}, "required": ["name", "age"],
            "additionalProperties": False}
        finished_by_itself = 0
        for seed in range(1, 9):
            request = textgen_pb2.GenerateRequest(
                text="Lily's friend, as JSON:", sampling=textgen_pb2.SamplingParameters(seed=seed),
                stopping=textgen_pb2.StoppingCriteria(max_new_tokens=120),
                constraint=textgen_pb2.OutputConstraint(json_schema=json.dumps(schema)))
            responses = list(stub.Generate(request, timeout=60))
            answer = "".join(r.text for r in responses)
            done = responses[-1].finished
            assert done.timings.constraint_cache_hit == (seed > 1), done.timings
            if done.reason == textgen_pb2.FINISH_REASON_EOS:
                finished_by_itself += 1
                jsonschema.validate(json.loads(answer), schema,
                                    cls=jsonschema.Draft202012Validator)
        assert finished_by_itself >= 4, f"only {finished_by_itself} of 8 answers finished"
        request = textgen_pb2.GenerateRequest(
            text="Her phone number is", sampling=textgen_pb2.SamplingParameters(seed=1),
            stopping=textgen_pb2.StoppingCriteria(max_new_tokens=40),
            constraint=textgen_pb2.OutputConstraint(regex=r" \d{3}-\d{4}\."))
        responses = list(stub.Generate(request, timeout=60))
        answer = "".join(r.text for r in responses)
        assert responses[-1].finished.reason == textgen_pb2.FINISH_REASON_EOS, responses[-1]
        assert re.fullmatch(r" \d{3}-\d{4}\.", answer), answer
        try:
            list(stub.Generate(textgen_pb2.GenerateRequest(
                text="x", constraint=textgen_pb2.OutputConstraint(
                    json_schema='{"type": "string", "not": {"const": "a"}}')), timeout=30))
            raise AssertionError("a schema with \"not\" was accepted")
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
            assert 'keyword "not" is not supported' in error.details(), error.details()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    assert code == 0, f"textgen-server exited with {code} after SIGTERM"
    print("python client e2e: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
