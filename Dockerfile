# textgen: CPU text-generation server. Two stages: build with Debian 12's -dev packages, run on
# Debian 12 with only the runtime libraries. The bundled default model is baked in.
#   podman build -t textgen .   (or docker build)
#   podman run --rm -p 50051:50051 -p 8080:8080 -p 9090:9090 textgen
FROM debian:bookworm AS build
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      cmake ninja-build g++ pkg-config libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev \
      protobuf-compiler libabsl-dev libdnnl-dev ocl-icd-opencl-dev prometheus-cpp-dev \
      nlohmann-json3-dev libpcre2-dev libutf8proc-dev libboost-dev libssl-dev libgtest-dev libgmock-dev \
      libxxhash-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY proto proto
COPY model model
COPY server server
COPY client client
COPY tests tests
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTEXTGEN_BUILD_TESTS=OFF \
      -DTEXTGEN_BUILD_BENCH=OFF \
    && cmake --build build --target textgen-server textgen

FROM debian:bookworm-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libgrpc++1.51 libgrpc29 libprotobuf32 libdnnl2 libprometheus-cpp-pull1.0 \
      libprometheus-cpp-core1.0 libabsl20220623 libpcre2-8-0 libutf8proc2 libgomp1 libssl3 libxxhash0 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /nonexistent textgen \
    && install -d -o textgen -g textgen /var/cache/textgen
COPY --from=build /src/build/bin/textgen-server /src/build/bin/textgen /usr/local/bin/
COPY models/default.gguf /models/default.gguf
USER textgen
EXPOSE 50051 8080 9090
ENV TEXTGEN_MODEL=/models/default.gguf
# The server is PID 1: it handles SIGTERM itself (drain, then exit 0).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
  CMD ["textgen", "health", "--addr", "127.0.0.1:50051"]
ENTRYPOINT ["textgen-server", "--listen", "0.0.0.0:50051", "--http-listen", "0.0.0.0:8080", \
            "--metrics-listen", "0.0.0.0:9090"]
CMD ["--model", "/models/default.gguf"]
