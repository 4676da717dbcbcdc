# Shared set-up for crag's scripts: sourced, not run.
# Installs the system packages the build and tests need (protoc for lancedb, make for jemalloc,
# postgresql for the session store's tests, chromium and its driver for the inspector's browser
# test) and fetches the model assets.
set -euo pipefail

CRAG_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CRAG_ROOT
# One target directory outside the clone, reused by every run and every clone.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/crag/target}"

crag_log() { printf '[crag] %s\n' "$*" >&2; }

crag_install_system_packages() {
  local missing=()
  command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
  command -v python3 >/dev/null 2>&1 || missing+=(python3)
  # The object-store server's script (scripts/s3-server.sh) talks to it with curl.
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  # jemalloc (crag's allocator, built by tikv-jemalloc-sys) is built with make.
  command -v make >/dev/null 2>&1 || missing+=(make)
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
  # The Postgres session store's tests run a throwaway cluster (scripts/pg-cluster.sh).
  command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
    || missing+=(postgresql)
  # The query inspector's browser test (scripts/inspector-check.sh): Chromium and its WebDriver.
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
  [ ${#missing[@]} -eq 0 ] && return 0
  crag_log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# A venv of its own for one pinned Python requirement (the check scripts' clients), made or
# updated when the pin changes: crag_pinned_venv DIR REQUIREMENT.
crag_pinned_venv() {
  local venv="$1" requirement="$2"
  [ "$(cat "$venv/.crag-requirements" 2>/dev/null)" = "$requirement" ] && return 0
  crag_log "installing $requirement into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input "$requirement"
  echo "$requirement" > "$venv/.crag-requirements"
}

crag_setup() {
  crag_install_system_packages
  bash "$CRAG_ROOT/scripts/setup-assets.sh"
}
