#!/usr/bin/env bash
# A throwaway S3-compatible object store for the object-storage tests: moto's server from
# PyPI (`moto[server]`, pinned; it honours the conditional PUT Lance commits with), listening
# on loopback, with the bucket `crag` created.
#
#   bash scripts/s3-server.sh start   start (or reuse) it; prints its endpoint URL last
#   bash scripts/s3-server.sh stop    stop it
#
# Port: $CRAG_S3_PORT or 5391. Clients take the credentials from the environment
# (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY: any value is accepted by moto).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
set -euo pipefail

PORT="${CRAG_S3_PORT:-5391}"
DIR="${CRAG_S3_DIR:-/tmp/crag-s3}"
VENV="${CRAG_S3_VENV:-$HOME/.cache/crag/moto-venv}"
BUCKET=crag
ENDPOINT="http://127.0.0.1:$PORT"
log() { echo "s3-server: $*" >&2; }
die() { echo "s3-server: error: $*" >&2; exit 1; }

up() { curl -fsS -o /dev/null "$ENDPOINT/moto-api/" 2>/dev/null; }

start() {
    if ! up; then
        crag_pinned_venv "$VENV" "moto[server]==5.2.5" >&2
        mkdir -p "$DIR"
        nohup "$VENV/bin/moto_server" -H 127.0.0.1 -p "$PORT" >"$DIR/server.log" 2>&1 &
        echo $! >"$DIR/pid"
        for _ in $(seq 1 120); do
            up && break
            sleep 0.5
        done
        up || { tail -20 "$DIR/server.log" >&2; die "moto did not answer on $ENDPOINT"; }
        log "moto running on $ENDPOINT (log $DIR/server.log)"
    else
        log "moto already running on $ENDPOINT"
    fi
    # Creating an existing bucket is refused with 409; either way it exists afterwards.
    local code
    code="$(curl -sS -o /dev/null -w '%{http_code}' -X PUT "$ENDPOINT/$BUCKET")"
    [[ "$code" == 200 || "$code" == 409 ]] || die "creating bucket $BUCKET: HTTP $code"
    echo "$ENDPOINT"
}

stop() {
    if [[ -f "$DIR/pid" ]]; then
        kill "$(cat "$DIR/pid")" 2>/dev/null || true
    fi
    rm -rf "$DIR"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    url) echo "$ENDPOINT" ;;
    *) die "unknown command ${1} (start, stop, url)" ;;
esac
