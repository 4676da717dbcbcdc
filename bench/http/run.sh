#!/usr/bin/env bash
# Queries/s and latency of `crag serve` over HTTP with 1, 2, 4 and 8 concurrent clients, on an
# existing index (ingest first: `crag --data-dir DIR ingest corpus.jsonl`, or reuse the index
# `crag eval` built under <data-dir>/eval/<name>).
#
#   bash bench/http/run.sh INDEX_DIR QUERIES_JSONL            # hybrid
#   CRAG_HTTP_CRAG=1 bash bench/http/run.sh INDEX_DIR QUERIES # hybrid + Corrective RAG
#
# Environment:
#   CRAG_BIN         crag binary (default $HOME/.cache/crag/target/debug/crag; name the profile
#                    you built with the figures)
#   CRAG_HTTP_ADDR   listening address (default 127.0.0.1:18080; gRPC on the next port)
#   CRAG_CLIENTS     client counts (default 1,2,4,8)
#   CRAG_SECONDS     seconds per client count (default 20)
#   CRAG_HTTP_CRAG   1: use_crag true
#   CRAG_HTTP_OUT    where the JSON report goes (default $HOME/.cache/crag/http/run-<time>.json)
# Other CRAG_* variables configure the server as usual (e.g. CRAG_RETRIEVAL__QUERY_CACHE_ENTRIES=0
# so repeated queries are embedded again). The load generator is bench/http/load.py (Python
# standard library); it shares the machine's cores with the server and reports its CPU time.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() { echo "run.sh: error: $*" >&2; exit 1; }

[[ $# -eq 2 ]] || die "usage: bash bench/http/run.sh INDEX_DIR QUERIES_JSONL"
INDEX="$1"
QUERIES="$2"
[[ -d "$INDEX" ]] || die "$INDEX is not a directory"
[[ -f "$QUERIES" ]] || die "$QUERIES does not exist"
CRAG_BIN="${CRAG_BIN:-$HOME/.cache/crag/target/debug/crag}"
[[ -x "$CRAG_BIN" ]] || die "no crag binary at $CRAG_BIN; build it or set CRAG_BIN"
ADDR="${CRAG_HTTP_ADDR:-127.0.0.1:18080}"
HOST="${ADDR%:*}"
PORT="${ADDR##*:}"
OUT="${CRAG_HTTP_OUT:-$HOME/.cache/crag/http/run-$(date +%Y%m%d-%H%M%S).json}"
mkdir -p "$(dirname "$OUT")"
LOG="${OUT%.json}.server.log"

"$CRAG_BIN" --data-dir "$INDEX" serve --http-addr "$ADDR" --grpc-addr "$HOST:$((PORT + 1))" \
    >"$LOG" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true' EXIT

for _ in $(seq 1 600); do
    if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://$ADDR/readyz', timeout=1)" \
        2>/dev/null; then
        break
    fi
    kill -0 "$SERVER" 2>/dev/null || die "the server stopped, see $LOG"
    sleep 0.2
done

echo "== $CRAG_BIN serve on $ADDR over $INDEX; load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores" >&2
args=(--clients "${CRAG_CLIENTS:-1,2,4,8}" --seconds "${CRAG_SECONDS:-20}" --json "$OUT")
if [[ "${CRAG_HTTP_CRAG:-0}" == 1 ]]; then args+=(--crag); fi
python3 "$HERE/load.py" "http://$ADDR" "$QUERIES" "${args[@]}"
echo "report in $OUT, server log in $LOG" >&2
