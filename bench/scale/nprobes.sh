#!/usr/bin/env bash
# The ANN index's partitions searched (`[vector_index] nprobes`) against recall and time, on
# an index bench/scale/run.sh built: for each value, the vector leg through the index
# (`crag eval --stages vector`, no in-memory scan) compared with run.sh's exact scan of the
# same queries (WORK_DIR/n<N>/runs-exact), recall@10 and p50 / p99 printed and written to
# WORK_DIR/n<N>/nprobes.json (nprobes.py). `0` is LanceDB's adaptive choice.
#
#   bash bench/scale/nprobes.sh CRAG_BINARY WORK_DIR N [NPROBES...]
#   e.g. bash bench/scale/nprobes.sh target/quick-release/crag /work/scale/run 100000 0 2 4 8 16
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: nprobes.sh CRAG_BINARY WORK_DIR N [NPROBES...]" >&2; exit 2; }
crag=$1 work=$2 n=$3
shift 3
if [ $# -gt 0 ]; then probes=("$@"); else probes=(0 2 4 8 16 32); fi
out="$work/n$n" data="$work/data-$n"
[ -s "$out/runs-exact/vector.run" ] || { echo "no exact runs in $out: run bench/scale/run.sh first" >&2; exit 1; }
export CRAG_RETRIEVAL__QUERY_CACHE_ENTRIES=0 CRAG_LOG=${CRAG_LOG:-warn}
for p in "${probes[@]}"; do
  CRAG_VECTOR_INDEX__MEMORY_SCAN_ROWS=0 CRAG_VECTOR_INDEX__NPROBES=$p \
    "$crag" --data-dir "$data" eval --dataset "$out/dataset" --index-dir "$data" \
    --stages vector --clients 0 --runs "$out/runs-nprobes-$p" --json "$out/vector-nprobes-$p.json" \
    > "$out/vector-nprobes-$p.txt" 2> "$out/vector-nprobes-$p.log"
done
python3 "$(dirname "$0")/nprobes.py" "$out" "${probes[@]}"
