"""Starting the real textgen-server binary from Python e2e tests (Debian python3-grpcio)."""
import os
import re
import subprocess
import sys
import threading


def generate_stubs(proto_root, out_dir):
    """Generates the Python stubs of textgen.proto into out_dir and makes them importable."""
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run(["protoc", f"--proto_path={proto_root}", f"--python_out={out_dir}",
                    f"--grpc_out={out_dir}", "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin",
                    os.path.join(proto_root, "textgen/v1/textgen.proto")], check=True)
    sys.path.insert(0, out_dir)


def start_server(binary, model, *extra_flags):
    """Starts textgen-server on a free loopback port; returns (process, port)."""
    process = subprocess.Popen(
        [binary, "--model", model, "--listen", "127.0.0.1:0", "--metrics-listen=",
         "--threads", "1", "--drain-timeout", "10s", *extra_flags],
        stderr=subprocess.PIPE, text=True)
    port = None
    for line in process.stderr:  # the startup line names the port the server bound
        sys.stderr.write("[server] " + line)
        match = re.search(r"grpc_port=(\d+)", line)
        if match:
            port = int(match.group(1))
            break
    if port is None:
        raise RuntimeError(f"textgen-server exited with {process.wait()} before serving")
    # Keep draining its log so it never blocks on a full pipe.
    threading.Thread(target=lambda: [sys.stderr.write("[server] " + l) for l in process.stderr],
                     daemon=True).start()
    return process, port
