#!/usr/bin/env bash
# CGRAG with a real small model over this project's docs: asks the 20 questions of
# questions.txt with `crag ask --json` (LLM detector, SmolLM2-135M via scripts/llm-server.sh),
# each in a session, then one follow-up in the first session; prints how many completed, the
# share of passes whose reply parsed, stop reasons, passes and latencies.
#
#   bash bench/ask/run.sh [CRAG_BINARY]      (default: the debug build in $CARGO_TARGET_DIR)
#   CRAG_ASK_JSON=true bash bench/ask/run.sh   the JSON variant of the prompt
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/env.sh"
CRAG="${1:-$CARGO_TARGET_DIR/debug/crag}"
URL="$(bash "$ROOT/scripts/llm-server.sh" start)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/crag.toml" <<TOML
data_dir = "$WORK/data"
[llm]
base_url = "$URL"
model = "smollm2-135m-instruct"
rewrite = false
[cgrag]
detector = "llm"
json_prompt = ${CRAG_ASK_JSON:-false}
TOML
"$CRAG" --config "$WORK/crag.toml" ingest "$ROOT/docs" >&2
i=0
while IFS= read -r question; do
    [[ -z "$question" ]] && continue
    i=$((i + 1))
    if "$CRAG" --config "$WORK/crag.toml" ask "$question" --no-web --new-session --json \
        > "$WORK/answer-$i.json" 2> "$WORK/err-$i.txt"; then :; else
        echo "question $i failed: $(cat "$WORK/err-$i.txt")" >&2
    fi
done < "$ROOT/bench/ask/questions.txt"
first_session="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['sessionId'])" "$WORK/answer-1.json")"
"$CRAG" --config "$WORK/crag.toml" ask "And what else does it combine?" --no-web \
    --session "$first_session" --json > "$WORK/followup.json"
python3 - "$WORK" "$i" <<'PY'
import glob, json, statistics, sys
work, asked = sys.argv[1], int(sys.argv[2])
answers = [json.load(open(p)) for p in sorted(glob.glob(f"{work}/answer-*.json"))]
passes = [p for a in answers for p in a["passes"]]
parsed = sum(p["parsed"] for p in passes)
stops = {}
for a in answers:
    stops[a["stop"]] = stops.get(a["stop"], 0) + 1
answered = sum(1 for a in answers if a["answer"])
ms = [a["totalMs"] for a in answers]
follow = json.load(open(f"{work}/followup.json"))
print(f"questions: {asked}, completed: {len(answers)}")
print(f"passes: {len(passes)} ({statistics.mean(len(a['passes']) for a in answers):.2f} per question), replies parsed: {parsed}/{len(passes)} = {parsed / max(1, len(passes)):.0%}")
print(f"answers with text: {answered}/{len(answers)}; stops: {stops}")
print(f"gaps named: {sum(a['gapsIdentified'] for a in answers)}, resolved: {sum(a['gapsResolved'] for a in answers)}, unresolved: {sum(a['gapsUnresolved'] for a in answers)}")
print(f"latency ms: median {statistics.median(ms):.0f}, max {max(ms):.0f}")
print(f"follow-up in session 1: contextFromCache {follow['contextFromCache']}, {follow['totalMs']:.0f} ms (first question: {answers[0]['totalMs']:.0f} ms)")
PY
