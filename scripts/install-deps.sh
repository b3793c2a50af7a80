#!/usr/bin/env bash
# Installs the Debian 12 packages textgen needs to build, test and run (only when missing).
# Usage: scripts/install-deps.sh [--test]   (--test adds what the test suite needs)
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config git libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
  protobuf-compiler libabsl-dev libdnnl-dev ocl-icd-opencl-dev prometheus-cpp-dev libgtest-dev
  libgmock-dev libbenchmark-dev nlohmann-json3-dev libpcre2-dev libutf8proc-dev libboost-dev libssl-dev libxxhash-dev)
if [[ "${1:-}" == "--test" ]]; then
  # Reference implementations the tests compare against, other-language clients, fuzzing,
  # and the balancer and monitoring the scale-out test runs.
  packages+=(python3 python3-torch python3-numpy python3-yaml python3-sentencepiece python3-grpcio
    python3-protobuf python3-jinja2 python3-jsonschema json-schema-test-suite clang libclang-rt-14-dev curl
    nginx-light haproxy prometheus)
  # Node.js for the Node client test and the reference tokenizer; keep an existing install.
  command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
