#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, ingest the project's own docs, answer a query.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
crag_setup
cd "$CRAG_ROOT"
crag_log "building crag (first build compiles LanceDB: 10-20 minutes on 2 cores)"
cargo build --locked -p crag-cli
CRAG="$CARGO_TARGET_DIR/debug/crag"
DATA="${CRAG_DATA_DIR:-$CRAG_ROOT/.crag}"
crag_log "ingesting README.md and docs/ into $DATA"
"$CRAG" --data-dir "$DATA" ingest README.md
"$CRAG" --data-dir "$DATA" ingest docs
"$CRAG" --data-dir "$DATA" stats
QUERY="${1:-how does crag fuse keyword and vector results?}"
crag_log "query: $QUERY"
"$CRAG" --data-dir "$DATA" query "$QUERY" --top-k 5
