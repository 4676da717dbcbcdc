#!/usr/bin/env bash
# Queries/s with one and with two `crag serve` replicas over one shared index (both legs in
# the object store, `[storage] keyword = "lancedb"`), each with its own empty data directory
# (docs/benchmarks.md, "Replicas"). One BEIR collection is ingested once into the object
# store, then bench/http/load.py drives 1,2,4,8 clients against one replica, then against two
# (clients spread over both).
#
#   bash bench/storage/replicas.sh [CRAG_BINARY] [WORK_DIR] [COLLECTION_DIR]
#
# The object store is moto's server on loopback (scripts/s3-server.sh). On a 2-core machine the
# replicas share the cores: the figure shows they do not interfere, not that they scale.
# Environment: CRAG_CLIENTS (default 1,2,4,8), CRAG_SECONDS (default 20), CRAG_REPLICAS_URI (an
# index of the collection already in the object store, e.g. bench/storage/run.sh's s3/lancedb
# one: no ingest).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
crag=${1:-target/quick-release/crag}
work=${2:-/tmp/crag-replicas}
collection=${3:-${SHARED:-../shared}/data/cranfield}
endpoint="$(bash "$root/scripts/s3-server.sh" start)"
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
export CRAG_STORAGE__ENDPOINT="$endpoint" CRAG_STORAGE__ALLOW_HTTP=true CRAG_STORAGE__REGION=us-east-1
export CRAG_STORAGE__KEYWORD=lancedb CRAG_STORAGE__READ_CONSISTENCY_MS=1000
uri=${CRAG_REPLICAS_URI:-}
rm -rf "$work"
mkdir -p "$work"
queries="$work/queries.jsonl"
python3 "$root/bench/storage/judged_queries.py" "$collection/queries.jsonl" \
  "$collection/qrels/test.tsv" "$queries"
if [ -z "$uri" ]; then
  uri="s3://crag/replicas-$(date +%s)/index"
  echo "replicas.sh: ingesting into $uri (CRAG_REPLICAS_URI=$uri reuses it)" >&2
  "$crag" --data-dir "$work/writer" --vectors-uri "$uri" ingest "$collection/corpus.jsonl" \
    --json > "$work/ingest.json"
fi

servers=()
cleanup() { for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
start() { # name, port
  "$crag" --data-dir "$work/$1" --vectors-uri "$uri" serve --http-addr "127.0.0.1:$2" \
    --grpc-addr "127.0.0.1:$(($2 + 1))" > "$work/$1.log" 2>&1 &
  servers+=($!)
  for _ in $(seq 1 600); do
    if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$2/readyz', timeout=1)" 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "replicas.sh: replica $1 did not become ready, see $work/$1.log" >&2
  exit 1
}
load() { # label, urls
  echo "== $1 (load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
  python3 "$root/bench/http/load.py" "$2" "$queries" --clients "${CRAG_CLIENTS:-1,2,4,8}" \
    --seconds "${CRAG_SECONDS:-20}" --json "$work/$3.json"
}
start replica-a 18280
load "one replica" "http://127.0.0.1:18280" one
start replica-b 18282
load "two replicas" "http://127.0.0.1:18280,http://127.0.0.1:18282" two
