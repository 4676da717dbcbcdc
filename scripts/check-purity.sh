#!/usr/bin/env bash
# Pure crates must not depend (normal dependencies) on IO crates or an async runtime.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PURE_CRATES=(crag-core crag-judge crag-expansion crag-refine crag-gaps crag-routing crag-syntax crag-text)
FORBIDDEN='^(tokio|lancedb|tantivy|ort|reqwest|sqlx|tonic|axum|hyper|tokenizers) '
status=0
for crate in "${PURE_CRATES[@]}"; do
  tree=$(cargo tree --locked -e normal -p "$crate" --prefix none)
  found=$(printf '%s\n' "$tree" | sort -u | grep -E "$FORBIDDEN" || true)
  if [ -n "$found" ]; then
    echo "pure crate $crate depends on: $found" >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "pure crates are pure: ${PURE_CRATES[*]}" >&2
[ $status -eq 0 ] || exit $status

# The configuration schema builds nothing: no adapter crate, no backend.
ADAPTERS='^(crag-lancedb|crag-tantivy|crag-onnx|crag-websearch|crag-llm|crag-app|lancedb|tantivy|ort|reqwest|tonic|axum) '
found=$(cargo tree --locked -e normal -p crag-config --prefix none | sort -u | grep -E "$ADAPTERS" || true)
if [ -n "$found" ]; then
  echo "crag-config depends on an adapter or backend: $found" >&2
  exit 1
fi
echo "crag-config depends on no adapter" >&2

# Size: no source file outside tests over 500 lines, no main over 80.
long=$(find crates apps -path '*/src/*' -name '*.rs' ! -name 'tests.rs' ! -path '*/tests/*' \
  -exec awk 'END { if (NR > 500) print FILENAME ": " NR " lines" }' {} \;)
long_mains=$(find apps crates -path '*/src/*' -name 'main.rs' \
  -exec awk 'END { if (NR > 80) print FILENAME ": " NR " lines" }' {} \;)
if [ -n "$long$long_mains" ]; then
  printf 'source files over the size limits (500 lines, main.rs 80):\n%s%s\n' "$long" "$long_mains" >&2
  exit 1
fi
echo "every source file is under 500 lines, every main under 80" >&2

# Comments say what the code does and why, not where it came from: no "seed 00N" or "issue N"
# in a comment of the Rust or protobuf sources outside tests/ and benches/ (test modules inside
# src/ included). docs/seeds.md maps behaviour to the reference designs instead.
history=$(grep -rnIiE --include='*.rs' --include='*.proto' \
  '//.*(seed[ _-]?00[0-9]|issue #?[0-9]+)' crates apps |
  grep -vE '^[^:]*/(tests|benches)/' || true)
if [ -n "$history" ]; then
  printf 'comments citing a seed or an issue number (say what and why; docs/seeds.md maps the seeds):\n%s\n' \
    "$history" >&2
  exit 1
fi
echo "no source comment cites a seed or an issue number" >&2

# Modules: no import circle between the modules of a crate, no function outside tests over 100
# lines but declarative tables and the ones listed to split (scripts/check_modules.py says how).
python3 scripts/check_modules.py
