#!/usr/bin/env bash
# crag and two Python peers side by side on one BEIR collection: setup (peer venv),
# `crag eval`, bench/peers/seed_stack.py (the seeds' stack), bench/peers/script_stack.py (the
# script a user writes in an afternoon: bm25s + int8 MiniLM + convex fusion, and LanceDB
# Python's hybrid search), then a comparison table against each.
#
#   bash bench/peers/run.sh                                  # ../shared/data/scifact
#   CRAG_INDEX_DIR=/tmp/scifact-idx bash bench/peers/run.sh ../shared/data/scifact
#   CRAG_DATA_DIR=/tmp/evalroot bash bench/peers/run.sh ../shared/data/cranfield
#
# Environment:
#   CRAG_BIN        crag binary (default $HOME/.cache/crag/target/debug/crag)
#   CRAG_DATA_DIR   crag's data directory; its index is <dir>/eval/<name>
#                   (default $HOME/.cache/crag/peer/crag-data)
#   CRAG_INDEX_DIR  an existing crag index of the collection (--index-dir), reused when unchanged
#   CRAG_CLIENTS    concurrent clients of crag's throughput run (default 0: skipped)
#   CRAG_REPORT     an existing `crag eval --json` report: skip the crag run and use it
#   PEER_OUT        where reports and logs go (default $HOME/.cache/crag/peer/<name>/run-<time>)
#   CRAG_PEER_VENV  the peer's venv (see setup.sh)
#   PEER_FRESH_EMBEDDINGS  1: the peer embeds its corpus again (a cache under PEER_OUT) instead
#                   of reusing its cached embeddings, so its ingest time is measured
# Reports stay outside the repository: SciFact is CC BY-NC and none of its data is committed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DATASET="${1:-$ROOT/../shared/data/scifact}"
CRAG_BIN="${CRAG_BIN:-$HOME/.cache/crag/target/debug/crag}"
CRAG_DATA_DIR="${CRAG_DATA_DIR:-$HOME/.cache/crag/peer/crag-data}"
CRAG_CLIENTS="${CRAG_CLIENTS:-0}"

die() { echo "run.sh: error: $*" >&2; exit 1; }

[[ -f "$DATASET/corpus.jsonl" ]] || die "$DATASET is not a BEIR collection (no corpus.jsonl)"
if [[ -n "${CRAG_REPORT:-}" ]]; then
    [[ -f "$CRAG_REPORT" ]] || die "CRAG_REPORT=$CRAG_REPORT does not exist"
else
    [[ -x "$CRAG_BIN" ]] ||
        die "no crag binary at $CRAG_BIN; build it (bash scripts/run.sh) or set CRAG_BIN"
fi
DATASET="$(cd "$DATASET" && pwd)"
NAME="$(basename "$DATASET")"
OUT="${PEER_OUT:-$HOME/.cache/crag/peer/$NAME/run-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"

machine() {  # what the machine was doing, for the record
    echo "$1: $(date -Is) load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores" >>"$OUT/machine.txt"
}

echo "== setup" >&2
PY="$(bash "$HERE/setup.sh" | tail -n 1)"

if [[ -n "${CRAG_REPORT:-}" ]]; then
    cp "$CRAG_REPORT" "$OUT/crag.json"
    echo "== crag: using $CRAG_REPORT" >&2
else
    cmd=("$CRAG_BIN" --data-dir "$CRAG_DATA_DIR" eval --dataset "$DATASET"
         --clients "$CRAG_CLIENTS" --json "$OUT/crag.json")
    if [[ -n "${CRAG_INDEX_DIR:-}" ]]; then cmd+=(--index-dir "$CRAG_INDEX_DIR"); fi
    echo "== crag: ${cmd[*]}" | tee "$OUT/crag.log" >&2
    machine "crag start"
    "${cmd[@]}" 2>&1 | tee -a "$OUT/crag.log" || die "crag eval failed, see $OUT/crag.log"
    machine "crag end"
fi

peer=("$PY" "$HERE/seed_stack.py" "$DATASET" --json "$OUT/peer.json")
if [[ "${PEER_FRESH_EMBEDDINGS:-0}" == 1 ]]; then peer+=(--cache-dir "$OUT/peer-cache"); fi
echo "== peer: ${peer[*]}" | tee "$OUT/peer.log" >&2
machine "peer start"
"${peer[@]}" 2>&1 | tee -a "$OUT/peer.log" ||
    die "seed_stack.py failed, see $OUT/peer.log"
machine "peer end"

script=("$PY" "$HERE/script_stack.py" "$DATASET" --json "$OUT/script.json")
if [[ "${PEER_FRESH_EMBEDDINGS:-0}" == 1 ]]; then script+=(--cache-dir "$OUT/peer-cache"); fi
echo "== script: ${script[*]}" | tee "$OUT/script.log" >&2
machine "script start"
"${script[@]}" 2>&1 | tee -a "$OUT/script.log" ||
    die "script_stack.py failed, see $OUT/script.log"
machine "script end"

echo "== compare" >&2
{
    echo "### against the seeds' stack"
    "$PY" "$HERE/compare.py" "$OUT/crag.json" "$OUT/peer.json"
    echo
    echo "### against the afternoon script (and LanceDB Python hybrid)"
    "$PY" "$HERE/compare.py" "$OUT/crag.json" "$OUT/script.json"
} | tee "$OUT/compare.md"
echo "reports in $OUT" >&2
