#!/usr/bin/env bash
# The whole test suite: set-up (system packages, model assets, an LLM server, a Postgres
# cluster), formatting, purity of the pure crates, tests, clippy.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
crag_setup
cd "$CRAG_ROOT"
# Real services for the tests: a small LLM behind llama.cpp's OpenAI-compatible server
# (tests/llm.rs), a throwaway Postgres cluster (the Postgres session store's tests) and an
# S3-compatible object store (moto; LanceDB on object storage).
CRAG_TEST_LLM_URL="$(bash scripts/llm-server.sh start)"
CRAG_TEST_POSTGRES_URL="$(bash scripts/pg-cluster.sh start)"
CRAG_TEST_S3_URL="$(bash scripts/s3-server.sh start)"
export CRAG_TEST_LLM_URL CRAG_TEST_POSTGRES_URL CRAG_TEST_S3_URL
cargo fmt --all -- --check
bash scripts/check-purity.sh
cargo test --locked --workspace --all-targets
# An independent MCP client (the Python SDK) against the binary the tests built.
bash scripts/mcp-check.sh
# The query inspector in Chromium over WebDriver.
bash scripts/inspector-check.sh
cargo test --locked --workspace --doc
cargo clippy --locked --workspace --all-targets -- -D warnings
crag_log "all tests passed"
