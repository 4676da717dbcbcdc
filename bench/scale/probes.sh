#!/usr/bin/env bash
# The in-memory copy's partitions searched (`[vector_index] memory_probes`) against recall and
# time, on an index bench/scale/run.sh built: for each value, the vector leg from the copy
# (`crag eval --stages vector`; the copy is partitioned when it holds at least
# `memory_partition_from_rows` chunks) compared with run.sh's exact scan of the same queries
# (WORK_DIR/n<N>/runs-exact), recall@10 and p50 / p99 printed and written to
# WORK_DIR/n<N>/probes.json (nprobes.py --memory). Each run loads and partitions the copy again.
#
#   bash bench/scale/probes.sh CRAG_BINARY WORK_DIR N [PROBES...]
#   e.g. bash bench/scale/probes.sh target/quick-release/crag /work/scale/run 1000000 8 16 32 64
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: probes.sh CRAG_BINARY WORK_DIR N [PROBES...]" >&2; exit 2; }
crag=$1 work=$2 n=$3
shift 3
if [ $# -gt 0 ]; then probes=("$@"); else probes=(8 16 32 64); fi
out="$work/n$n" data="$work/data-$n"
[ -s "$out/runs-exact/vector.run" ] || { echo "no exact runs in $out: run bench/scale/run.sh first" >&2; exit 1; }
export CRAG_RETRIEVAL__QUERY_CACHE_ENTRIES=0 CRAG_LOG=${CRAG_LOG:-warn}
for p in "${probes[@]}"; do
  CRAG_VECTOR_INDEX__MEMORY_PROBES=$p \
    "$crag" --data-dir "$data" eval --dataset "$out/dataset" --index-dir "$data" \
    --stages vector --clients 0 --runs "$out/runs-probes-$p" --json "$out/vector-probes-$p.json" \
    > "$out/vector-probes-$p.txt" 2> "$out/vector-probes-$p.log"
done
python3 "$(dirname "$0")/nprobes.py" --memory "$out" "${probes[@]}"
