#!/usr/bin/env bash
# Creates the Python virtual environment of the peer stack (bench/peers/seed_stack.py) and
# installs its pinned packages from PyPI with the ordinary pip client. Idempotent: an existing
# venv that already has the pinned versions is left alone.
#
#   bash bench/peers/setup.sh            # venv in $HOME/.cache/crag/peer-venv
#   CRAG_PEER_VENV=/some/dir bash bench/peers/setup.sh
#
# Prints the venv's python path on the last line of stdout.
set -euo pipefail

VENV="${CRAG_PEER_VENV:-$HOME/.cache/crag/peer-venv}"
PYTHON="${PYTHON:-python3}"
# Pinned: rank_bm25 is the seeds' BM25; bm25s with PyStemmer and LanceDB (with pyarrow and
# pandas) are the afternoon script's (script_stack.py); onnxruntime matches the runtime
# library crag loads (libonnxruntime.so.1.31.1, see scripts/setup-assets.sh).
PACKAGES=(
    "rank_bm25==0.2.2"
    "bm25s==0.3.16"
    "PyStemmer==3.1.0"
    "lancedb==0.40.0"
    "pyarrow==26.0.1"
    "pandas==3.1.1"
    "numpy==2.4.6"
    "onnxruntime==1.31.1"
    "tokenizers==0.23.3"
)

die() { echo "setup.sh: error: $*" >&2; exit 1; }

command -v "$PYTHON" >/dev/null 2>&1 ||
    die "no '$PYTHON' on PATH; install Python >= 3.10 (Debian: apt-get install python3 python3-venv) or set PYTHON"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' ||
    die "$("$PYTHON" --version 2>&1) is too old; Python >= 3.10 is needed"

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "creating venv $VENV" >&2
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV" ||
        die "'$PYTHON -m venv' failed; on Debian install python3-venv (apt-get install python3-venv)"
fi

# Install only when a pinned package is missing or at another version.
if "$VENV/bin/python" - "${PACKAGES[@]}" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version

def norm(name):
    return name.lower().replace("_", "-")

for pin in sys.argv[1:]:
    name, wanted = pin.split("==")
    try:
        if version(norm(name)) != wanted:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
then
    echo "peer venv up to date: $VENV" >&2
else
    echo "installing ${PACKAGES[*]} into $VENV" >&2
    "$VENV/bin/python" -m pip install --quiet "${PACKAGES[@]}" ||
        die "pip install failed (is PyPI reachable? see pip's message above)"
fi

"$VENV/bin/python" -c 'import numpy, onnxruntime, rank_bm25, tokenizers, bm25s, Stemmer, lancedb' ||
    die "the venv $VENV cannot import its packages; remove it and run this script again"
echo "$VENV/bin/python"
