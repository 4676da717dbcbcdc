#!/usr/bin/env bash
# An independent MCP client against `crag mcp`: the Python `mcp` SDK (pinned, in its own venv)
# over stdio, on a data directory holding the fixture corpus. Run by scripts/test.sh after the
# Rust tests (which build the binary); `bash scripts/mcp-check.sh [CRAG_BINARY]` on its own.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
MCP_VERSION=2.3.0
VENV="${CRAG_MCP_VENV:-$HOME/.cache/crag/mcp-venv}"
BIN="${1:-$CARGO_TARGET_DIR/debug/crag}"
[ -x "$BIN" ] || { crag_log "mcp-check: no crag binary at $BIN (cargo build -p crag-cli)"; exit 1; }
crag_pinned_venv "$VENV" "mcp==$MCP_VERSION"
DATA="$(mktemp -d)"
trap 'rm -rf "$DATA"' EXIT
"$BIN" --data-dir "$DATA" ingest "$CRAG_ROOT/tests/fixtures/corpus" >/dev/null
"$VENV/bin/python" "$CRAG_ROOT/scripts/mcp_check.py" "$BIN" "$DATA"
