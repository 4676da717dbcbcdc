#!/usr/bin/env bash
# CGRAG with a real small model over this project's docs: asks the 20 questions of
# questions.txt with `crag ask --json` (LLM detector, SmolLM2-135M via scripts/llm-server.sh),
# each in a session; prints how many completed, the share of passes whose reply parsed, stop
# reasons, passes and latencies. Then the follow-ups of followups-docs.txt
# (QUESTION<TAB>FOLLOW-UP): the follow-up in a new session (the control, after an unrelated
# request), the question in a new session, and at once the follow-up in that session, as a user
# asks it; prints the three latencies.
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
j=0
while IFS=$'\t' read -r question follow; do
    [[ -z "$question" ]] && continue
    j=$((j + 1))
    "$CRAG" --config "$WORK/crag.toml" ask "$follow" --no-web --new-session --json > "$WORK/pair-$j-control.json"
    "$CRAG" --config "$WORK/crag.toml" ask "$question" --no-web --new-session --json > "$WORK/pair-$j-first.json"
    session="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['sessionId'])" "$WORK/pair-$j-first.json")"
    "$CRAG" --config "$WORK/crag.toml" ask "$follow" --no-web --session "$session" --json > "$WORK/pair-$j-follow.json"
done < "$ROOT/bench/ask/followups-docs.txt"
python3 - "$WORK" "$i" <<'PY'
import glob, json, statistics, sys
work, asked = sys.argv[1], int(sys.argv[2])
answers = [json.load(open(p)) for p in sorted(glob.glob(f"{work}/answer-*.json"))]
pairs = {k: [json.load(open(p)) for p in sorted(glob.glob(f"{work}/pair-*-{k}.json"))] for k in ("control", "first", "follow")}
passes = [p for a in answers for p in a["passes"]]
parsed = sum(p["parsed"] for p in passes)
stops = {}
for a in answers:
    stops[a["stop"]] = stops.get(a["stop"], 0) + 1
answered = sum(1 for a in answers if a["answer"])
ms = [a["totalMs"] for a in answers]
print(f"questions: {asked}, completed: {len(answers)}")
print(f"passes: {len(passes)} ({statistics.mean(len(a['passes']) for a in answers):.2f} per question), replies parsed: {parsed}/{len(passes)} = {parsed / max(1, len(passes)):.0%}")
print(f"answers with text: {answered}/{len(answers)}; stops: {stops}")
print(f"gaps named: {sum(a['gapsIdentified'] for a in answers)}, resolved: {sum(a['gapsResolved'] for a in answers)}, unresolved: {sum(a['gapsUnresolved'] for a in answers)}")
print(f"latency ms: median {statistics.median(ms):.0f}, max {max(ms):.0f}")
for kind, label in (("first", "question, new session"), ("follow", "follow-up, same session"), ("control", "follow-up, new session")):
    r = pairs[kind]
    ms = [a["totalMs"] for a in r]
    print(f"{label}: n {len(r)}, passes {statistics.mean(a['passesUsed'] for a in r):.2f}, "
          f"from cache {statistics.mean(a['contextFromCache'] for a in r):.2f}, "
          f"totalMs median {statistics.median(ms):.0f}, mean {statistics.mean(ms):.0f}")
faster = sum(f["totalMs"] < q["totalMs"] for q, f in zip(pairs["first"], pairs["follow"]))
print(f"follow-up faster than its question: {faster}/{len(pairs['follow'])}")
faster = sum(f["totalMs"] < c["totalMs"] for c, f in zip(pairs["control"], pairs["follow"]))
print(f"follow-up faster than the same follow-up without the session: {faster}/{len(pairs['follow'])}")
PY
