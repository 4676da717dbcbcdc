#!/usr/bin/env bash
# A follow-up against the first question of its session (issue 16), LLM-free: the code gap
# detector over this project's own crates/ and apps/. For each line of followups.txt
# (QUESTION<TAB>FOLLOW-UP): the question in a new session, the follow-up in that session,
# and the same follow-up in a new session as the control (same question, no cache). Prints
# each request's passes, context from cache and totalMs (the engine's own clock: retrieval
# and gap passes, not process start), then medians.
#
#   bash bench/ask/followup.sh [CRAG_BINARY]   (default: the debug build in $CARGO_TARGET_DIR)
#   ROUNDS=2 bash bench/ask/followup.sh        each pair asked ROUNDS times (fresh sessions)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/env.sh"
set +o pipefail
CRAG="${1:-$CARGO_TARGET_DIR/debug/crag}"
ROUNDS="${ROUNDS:-2}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/repo"
cp -r "$ROOT/crates" "$ROOT/apps" "$WORK/repo/"
cat > "$WORK/crag.toml" <<TOML
data_dir = "$WORK/data"
[cgrag]
detector = "code"
TOML
"$CRAG" --config "$WORK/crag.toml" ingest "$WORK/repo" >&2
ask() { "$CRAG" --config "$WORK/crag.toml" ask "$@" --no-web --json; }
for round in $(seq 1 "$ROUNDS"); do
    i=0
    while IFS=$'\t' read -r question follow; do
        [[ -z "$question" ]] && continue
        i=$((i + 1))
        ask "$question" --new-session > "$WORK/r$round-q$i-first.json"
        session="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['sessionId'])" "$WORK/r$round-q$i-first.json")"
        ask "$follow" --session "$session" > "$WORK/r$round-q$i-follow.json"
        ask "$follow" --new-session > "$WORK/r$round-q$i-control.json"
    done < "$ROOT/bench/ask/followups.txt"
done
python3 - "$WORK" <<'PY'
import glob, json, statistics, sys
work = sys.argv[1]
rows = {}
for kind in ("first", "follow", "control"):
    rows[kind] = [json.load(open(p)) for p in sorted(glob.glob(f"{work}/r*-q*-{kind}.json"))]
print(f"{'request':<26} {'n':>3} {'passes (mean)':>14} {'from cache (mean)':>18} {'totalMs median':>15} {'mean':>8}")
for kind, label in (("first", "first question"), ("follow", "follow-up, same session"), ("control", "follow-up, new session")):
    r = rows[kind]
    ms = [a["totalMs"] for a in r]
    print(f"{label:<26} {len(r):>3} {statistics.mean(a['passesUsed'] for a in r):>14.2f} "
          f"{statistics.mean(a['contextFromCache'] for a in r):>18.2f} {statistics.median(ms):>15.0f} {statistics.mean(ms):>8.0f}")
faster = sum(f["totalMs"] < q["totalMs"] for q, f in zip(rows["first"], rows["follow"]))
print(f"follow-up faster than its first question: {faster}/{len(rows['follow'])}")
faster_c = sum(f["totalMs"] < c["totalMs"] for c, f in zip(rows["control"], rows["follow"]))
print(f"follow-up faster than the same follow-up without the session: {faster_c}/{len(rows['follow'])}")
PY
