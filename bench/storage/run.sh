#!/usr/bin/env bash
# Where the indexes live, by cost (docs/benchmarks.md, "Indexes in an object store"): one
# BEIR collection ingested four ways, then its queries run, plain hybrid and hybrid + CRAG.
#
#   local/tantivy   data directory only (the default)
#   local/lancedb   data directory, the keyword leg in LanceDB's full-text index
#   s3/tantivy      vectors in the object store, Tantivy in the data directory
#   s3/lancedb      both legs in the object store (what replicas share)
#
#   bash bench/storage/run.sh [CRAG_BINARY] [WORK_DIR] [COLLECTION_DIR]
#
# The object store is moto's server on loopback (scripts/s3-server.sh): no network in the
# way, so the s3 rows show what the object-store path costs in CPU and requests, not a real
# S3's latency. Prints ingest docs/s and the query latency p50 / p95 / p99 (ms) and the legs'
# p50 from `crag query --batch --json`'s per-query timings, after a warm-up pass.
# Run it on an idle machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
crag=${1:-target/quick-release/crag}
work=${2:-/tmp/crag-storage}
collection=${3:-${SHARED:-../shared}/data/cranfield}
endpoint="$(bash "$root/scripts/s3-server.sh" start)"
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
export CRAG_STORAGE__ENDPOINT="$endpoint" CRAG_STORAGE__ALLOW_HTTP=true CRAG_STORAGE__REGION=us-east-1
run_id=$(date +%s)
mkdir -p "$work"
queries="$work/queries.jsonl"
python3 "$root/bench/storage/judged_queries.py" "$collection/queries.jsonl" \
  "$collection/qrels/test.tsv" "$queries"
summary() { # file, label
  python3 - "$1" "$2" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
total = sorted(q["timings"]["totalMs"] for q in report["queries"])
stage = lambda key: sorted(q["timings"][key] for q in report["queries"])
pct = lambda xs, p: xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs)) - 1))]
print(f"{sys.argv[2]:>28}: p50 {pct(total, 50):.2f} ms, p95 {pct(total, 95):.2f} ms, "
      f"p99 {pct(total, 99):.2f} ms (keyword p50 {pct(stage('keywordMs'), 50):.2f}, "
      f"vector p50 {pct(stage('vectorMs'), 50):.2f}, embed p50 {pct(stage('embedMs'), 50):.2f})")
PY
}
for layout in local/tantivy local/lancedb s3/tantivy s3/lancedb; do
  place=${layout%/*}
  keyword=${layout#*/}
  data="$work/$place-$keyword"
  rm -rf "$data"
  args=(--data-dir "$data")
  if [ "$place" = s3 ]; then
    args+=(--vectors-uri "s3://crag/bench-$run_id/$keyword")
    echo "# $layout at s3://crag/bench-$run_id/$keyword"
  fi
  export CRAG_STORAGE__KEYWORD=$keyword
  start=$(date +%s.%N)
  "$crag" "${args[@]}" ingest "$collection/corpus.jsonl" --json > "$work/ingest-$place-$keyword.json"
  end=$(date +%s.%N)
  docs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['documentsAdded'])" \
    "$work/ingest-$place-$keyword.json")
  python3 -c "import sys; d,s,e=map(float,sys.argv[1:4]); print(f'{sys.argv[4]:>28}: ingest {d:.0f} docs in {e-s:.1f} s, {d/(e-s):.1f} docs/s')" \
    "$docs" "$start" "$end" "$layout"
  for mode in hybrid crag; do
    flags=(--no-web --top-k 10 --json)
    [ "$mode" = hybrid ] && flags+=(--no-crag)
    "$crag" "${args[@]}" query --batch "$queries" "${flags[@]}" > /dev/null
    "$crag" "${args[@]}" query --batch "$queries" "${flags[@]}" > "$work/$place-$keyword-$mode.json"
    summary "$work/$place-$keyword-$mode.json" "$layout $mode"
  done
done
