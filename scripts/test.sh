#!/usr/bin/env bash
# The whole test suite: set-up, formatting, purity of the pure crates, tests, clippy.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
crag_setup
cd "$CRAG_ROOT"
cargo fmt --all -- --check
bash scripts/check-purity.sh
cargo test --locked --workspace --all-targets
cargo test --locked --workspace --doc
cargo clippy --locked --workspace --all-targets -- -D warnings
crag_log "all tests passed"
