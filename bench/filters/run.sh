#!/usr/bin/env bash
# Metadata filters on SciFact with a synthetic field (docs/benchmarks.md, "Metadata
# filters"): every document tagged into one of 100 buckets (bench/filters/make.py), the
# queries run with no filter and with a filter keeping one bucket (about 1 % of the
# documents), plain hybrid retrieval (no Corrective RAG), top 10.
#
#   bash bench/filters/run.sh [CRAG_BINARY] [WORK_DIR]
#
# Prints, per run, the queries answered with 10 results and the latency p50 / p95 (ms) from
# `crag query --batch --json`'s summary. Run it on an idle machine: the figures are timings.
set -euo pipefail
crag=${1:-target/quick-release/crag}
work=${2:-/tmp/crag-filters}
shared=${SHARED:-../shared}
data=$work/scifact-buckets
index=$work/data
python3 "$(dirname "$0")/make.py" "$shared/data/scifact" "$data"
if [ ! -d "$index/keyword" ]; then
  "$crag" --data-dir "$index" ingest "$data/corpus.jsonl" > "$work/ingest.txt"
fi
bucket='{"bucket": 42}'
run() { # name, extra args...
  local name=$1; shift
  "$crag" --data-dir "$index" query --batch "$data/queries.jsonl" --no-crag --no-web \
    --top-k 10 --json "$@" > "$work/$name.json"
  python3 - "$work/$name.json" "$name" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
queries = doc["queries"]
full = sum(1 for q in queries if len(q["results"]) == 10)
lat = doc["summary"]["latencyMs"]
print(f"{sys.argv[2]:>10}: {full}/{len(queries)} queries with 10 results, "
      f"p50 {lat['p50']:.2f} ms, p95 {lat['p95']:.2f} ms")
PY
}
# A first pass of each warms the caches and the in-memory copy of the vectors.
run warm-unfiltered > /dev/null
run warm-filtered --filter "$bucket" > /dev/null
run unfiltered
run filtered --filter "$bucket"
