#!/usr/bin/env bash
# The reliability runs at full length: sustained mixed load (8 clients over HTTP, then gRPC, for
# CRAG_LOAD_SECS, default 300 s), index consistency after injected write failures and after
# `kill -9` during compaction, and the adapters against services that hang, hang up, answer
# 500/429 or garbage.
# CI runs the same tests at their short defaults (scripts/test.sh); figures go to
# docs/reliability.md.
#
#   bash scripts/soak.sh                     # debug build
#   CRAG_LOAD_SECS=60 bash scripts/soak.sh   # a shorter load run
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
crag_setup
cd "$CRAG_ROOT"
export CRAG_LOAD_SECS="${CRAG_LOAD_SECS:-300}"
crag_log "load: 8 clients for ${CRAG_LOAD_SECS}s"
cargo test --locked -p crag-http --test load -- --nocapture
crag_log "load over gRPC: 8 clients for ${CRAG_LOAD_SECS}s"
cargo test --locked -p crag-grpc --test load -- --nocapture
crag_log "slow clients"
cargo test --locked -p crag-http --test slow_clients -- --nocapture
crag_log "index consistency after interrupted writes"
cargo test --locked -p crag-app --test reconcile -- --nocapture
crag_log "kill -9 during compaction"
cargo test --locked -p crag-cli --test crash -- --nocapture
crag_log "faults of the web search and LLM services"
cargo test --locked -p crag-websearch -p crag-llm
crag_log "soak finished"
