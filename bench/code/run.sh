#!/usr/bin/env bash
# Context completeness (issue 17): `crag eval-code` on this project's own source and on one
# public Python project from PyPI (an sdist, fetched with pip; nothing of it is committed).
#
#   bash bench/code/run.sh [CRAG_BINARY]     (default: the debug build in $CARGO_TARGET_DIR)
#   SAMPLES=40 SEED=7 PY_PROJECT=requests==2.32.3 bash bench/code/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/env.sh"
CRAG="${1:-$CARGO_TARGET_DIR/debug/crag}"
SAMPLES="${SAMPLES:-40}"
SEED="${SEED:-7}"
PY_PROJECT="${PY_PROJECT:-requests==2.32.3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# This project: its Rust crates and apps (no target dir, no docs).
mkdir -p "$WORK/crag"
cp -r "$ROOT/crates" "$ROOT/apps" "$WORK/crag/"
# One Python project from PyPI, as its source distribution.
python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$WORK/sdist" "$PY_PROJECT"
mkdir -p "$WORK/py"
tar -xzf "$WORK"/sdist/*.tar.gz -C "$WORK/py"
PY_DIR="$(find "$WORK/py" -mindepth 1 -maxdepth 1 -type d | head -1)"
rm -rf "$PY_DIR/tests" "$PY_DIR/docs"

for repo in "$WORK/crag" "$PY_DIR"; do
    name="$(basename "$repo")"
    "$CRAG" --data-dir "$WORK/data" eval-code "$repo" --samples "$SAMPLES" --seed "$SEED" \
        --work-dir "$WORK/idx-$name" --json "$WORK/$name.json"
    echo
done
