#!/usr/bin/env bash
# Hybrid + Corrective RAG at one size of bench/scale/run.sh, binaries alternated: for each
# binary, `crag query --batch` of the scale queries twice over in one process (the first pass
# warms the copy and the caches of the pages, the second is measured), query-embedding cache
# off, web search off; p50 / p99 of the keyword leg, the embedding, the vector leg, the rewrite
# and the whole query of the second pass printed, one line per binary.
#
#   bash bench/scale/corrected.sh WORK_DIR N CRAG_BINARY...
#   e.g. bash bench/scale/corrected.sh /work/scale/run 1000000 old/crag new/crag old/crag new/crag
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: corrected.sh WORK_DIR N CRAG_BINARY..." >&2; exit 2; }
work=$1 n=$2
shift 2
data="$work/data-$n" queries="$work/n$n/dataset/queries.jsonl"
[ -s "$queries" ] || { echo "no queries at $queries: run bench/scale/run.sh first" >&2; exit 1; }
export CRAG_RETRIEVAL__QUERY_CACHE_ENTRIES=0 CRAG_LOG=${CRAG_LOG:-warn}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat "$queries" "$queries" > "$tmp/queries.jsonl"
for crag in "$@"; do
  "$crag" --data-dir "$data" query --batch "$tmp/queries.jsonl" --no-web --top-k 10 --json \
    > "$tmp/out.json" 2> "$tmp/err.log"
  python3 - "$crag" "$tmp/out.json" <<'PY'
import json, sys
queries = json.load(open(sys.argv[2]))["queries"]
measured = queries[len(queries) // 2:]
def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]
stages = ["keywordMs", "embedMs", "vectorMs", "rewriteMs", "totalMs"]
print(sys.argv[1], " ".join(
    f"{s}={pct([q['timings'].get(s, 0) for q in measured], .5):.1f}/"
    f"{pct([q['timings'].get(s, 0) for q in measured], .99):.1f}" for s in stages))
PY
done
