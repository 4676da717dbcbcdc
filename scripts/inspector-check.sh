#!/usr/bin/env bash
# The query inspector in a real browser: Debian's chromium and chromium-driver (installed by
# env.sh) driven by Selenium (pinned, in its own venv) against `crag serve` with
# server.inspector over the fixture BEIR collection. Run by scripts/test.sh after the Rust
# tests (which build the binary). `bash scripts/inspector-check.sh [CRAG_BINARY] [SCREENSHOT]`;
# docs/inspector.png is made with SCREENSHOT = docs/inspector.png.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
SELENIUM_VERSION=4.51.0
VENV="${CRAG_BROWSER_VENV:-$HOME/.cache/crag/browser-venv}"
BIN="${1:-$CARGO_TARGET_DIR/debug/crag}"
[ -x "$BIN" ] || { crag_log "inspector-check: no crag binary at $BIN (cargo build -p crag-cli)"; exit 1; }
command -v chromium >/dev/null && command -v chromedriver >/dev/null \
  || { crag_log "inspector-check: chromium and chromium-driver are missing (crag_setup installs them)"; exit 1; }
crag_pinned_venv "$VENV" "selenium==$SELENIUM_VERSION"
WORK="$(mktemp -d)"
SHOT="${2:-$WORK/inspector.png}"
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
TOKEN="inspector-token-$(date +%s%N)"
read -r HTTP GRPC < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
cat > "$WORK/crag.toml" <<TOML
[server]
inspector = true

[auth]
tokens = ["$TOKEN"]
TOML
"$BIN" --data-dir "$WORK/data" ingest "$CRAG_ROOT/tests/fixtures/beir/corpus.jsonl" >/dev/null
"$BIN" --data-dir "$WORK/data" --config "$WORK/crag.toml" serve \
  --http-addr "127.0.0.1:$HTTP" --grpc-addr "127.0.0.1:$GRPC" >/dev/null 2>"$WORK/serve.log" &
PID=$!
for _ in $(seq 1 600); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$HTTP/readyz', timeout=1)" \
    2>/dev/null && break
  kill -0 "$PID" 2>/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
  sleep 0.2
done
"$VENV/bin/python" "$CRAG_ROOT/scripts/inspector_check.py" "http://127.0.0.1:$HTTP" "$TOKEN" "$SHOT"
