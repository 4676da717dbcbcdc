#!/usr/bin/env bash
# How a query's cost grows with the corpus (docs/benchmarks.md, "A million chunks"): for each
# size, the first N documents of the scale corpus (bench/scale/make_corpus.py) ingested with
# synthetic vectors (`crag ingest --synthetic-vectors`: the first SAMPLE chunks embedded by
# the real model, the rest perturbed copies; BM25, fusion, judging and the stores are real),
# then SciFact's test queries, embedded by the real model:
#
#   - per stage p50 / p99 (ms) from `crag query --batch --json`'s timings, plain hybrid and
#     hybrid + CRAG, query-embedding cache off, after a warm-up pass; peak RSS of the serving
#     process (/usr/bin/time);
#   - the ANN index's recall@10 against the exact scan (`crag eval --stages vector`, runs
#     compared by recall.py), its build time (from the ingest log), the index's size on disk;
#   - ingest throughput per tenth of the documents.
#
#   bash bench/scale/run.sh CRAG_BINARY WORK_DIR CORPUS_JSONL SCIFACT_DIR [SIZES...]
#   e.g. bash bench/scale/run.sh target/quick-release/crag /work/scale/run \
#          /work/scale/corpus-1m.jsonl ../shared/data/scifact 10000 100000 1000000
#
# REUSE_DATA=1 keeps a size's index from an earlier run (queries only, e.g. after a change of
# the query path). SAMPLE (default 2000) sets the real sample; ANN_MIN_ROWS (default 1000) the rows from which
# the ingest builds the ANN index, so every size has one to measure (the default
# configuration still scans its in-memory copy up to [vector_index] memory_scan_rows).
# Writes WORK_DIR/n<N>/{ingest.log,hybrid.json,crag.json,summary.json,...}; plot.py draws them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
[ $# -ge 4 ] || { echo "usage: run.sh CRAG_BINARY WORK_DIR CORPUS_JSONL SCIFACT_DIR [SIZES...]" >&2; exit 2; }
crag=$1 work=$2 corpus=$3 scifact=$4
shift 4
if [ $# -gt 0 ]; then sizes=("$@"); else sizes=(10000 100000 1000000); fi
sample=${SAMPLE:-2000}
export CRAG_RETRIEVAL__QUERY_CACHE_ENTRIES=0 CRAG_LOG=${CRAG_LOG:-warn,crag_lancedb=info,crag_engine=info}
mkdir -p "$work"
for n in "${sizes[@]}"; do
  out="$work/n$n" data="$work/data-$n"
  mkdir -p "$out/dataset/qrels"
  if [ ! -s "$out/dataset/corpus.jsonl" ]; then
    head -n "$n" "$corpus" > "$out/dataset/corpus.jsonl"
  fi
  python3 "$root/bench/scale/judged.py" "$out/dataset/corpus.jsonl" "$scifact" "$out/dataset"
  queries="$out/dataset/queries.jsonl"
  if [ "${REUSE_DATA:-0}" = 1 ] && [ -s "$out/ingest.json" ] && [ -d "$data" ]; then
    echo "# $n documents: reusing $data (REUSE_DATA=1)" >&2
  else
    echo "# $n documents: ingest into $data" >&2
    rm -rf "$data"
    CRAG_VECTOR_INDEX__ANN_MIN_ROWS=${ANN_MIN_ROWS:-1000} /usr/bin/time -v -o "$out/ingest.time" \
      "$crag" --data-dir "$data" ingest "$out/dataset/corpus.jsonl" \
      --synthetic-vectors "$sample" --json > "$out/ingest.json" 2> "$out/ingest.log"
  fi
  for mode in hybrid crag; do
    flags=(--no-web --top-k 10 --json)
    [ "$mode" = hybrid ] && flags+=(--no-crag)
    "$crag" --data-dir "$data" query --batch "$queries" "${flags[@]}" > /dev/null 2>&1
    /usr/bin/time -v -o "$out/$mode.time" \
      "$crag" --data-dir "$data" query --batch "$queries" "${flags[@]}" > "$out/$mode.json" 2> "$out/$mode.log"
  done
  # The vector leg through the ANN index (no in-memory scan), exactly (LanceDB's flat scan),
  # and from the in-memory copy as configured (partitioned from
  # `memory_partition_from_rows`): the same queries, top 10 compared with the exact scan's.
  for how in ann exact memory; do
    case $how in
      ann) env_args=(CRAG_VECTOR_INDEX__MEMORY_SCAN_ROWS=0) ;;
      exact) env_args=(CRAG_VECTOR_INDEX__MEMORY_SCAN_ROWS=0 CRAG_VECTOR_INDEX__ANN=false) ;;
      memory) env_args=(CRAG_LOG="${CRAG_LOG:-warn}") ;;
    esac
    env "${env_args[@]}" "$crag" --data-dir "$data" eval --dataset "$out/dataset" --index-dir "$data" \
      --stages vector --clients 0 --runs "$out/runs-$how" --json "$out/vector-$how.json" \
      > "$out/vector-$how.txt" 2> "$out/vector-$how.log"
  done
  python3 "$root/bench/scale/summary.py" "$n" "$out" "$data" | tee "$out/summary.txt"
done
