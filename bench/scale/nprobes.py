#!/usr/bin/env python3
"""The table of bench/scale/nprobes.sh (the ANN index's nprobes) or, with --memory, of
bench/scale/probes.sh (the in-memory copy's memory_probes): recall@10 against run.sh's exact
scan and the vector leg's p50 / p99 for each value, printed and written to
OUT_DIR/nprobes.json (probes.json with --memory).

    python3 bench/scale/nprobes.py [--memory] OUT_DIR NPROBES...
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summary import top10  # noqa: E402


def main():
    args = sys.argv[1:]
    memory = bool(args) and args[0] == "--memory"
    if memory:
        args = args[1:]
    out, probes = args[0], args[1:]
    name = "probes" if memory else "nprobes"
    exact = top10(os.path.join(out, "runs-exact", "vector.run"))
    rows = []
    for p in probes:
        approx = top10(os.path.join(out, f"runs-{name}-{p}", "vector.run"))
        recall = [len(approx.get(q, set()) & docs) / len(docs) for q, docs in exact.items() if docs]
        with open(os.path.join(out, f"vector-{name}-{p}.json"), encoding="utf-8") as f:
            latency = json.load(f)["stages"][0]["latencyMs"]
        rows.append({"nprobes": int(p), "recallAt10": sum(recall) / len(recall),
                     "p50": latency["p50"], "p99": latency["p99"]})
        print(f"{name} {p:>3}: recall@10 {rows[-1]['recallAt10']:.4f}, "
              f"vector p50 / p99 {latency['p50']:.2f} / {latency['p99']:.2f} ms")
    with open(os.path.join(out, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
