#!/usr/bin/env python3
"""The table of bench/scale/nprobes.sh: recall@10 against run.sh's exact scan and the vector
leg's p50 / p99 for each nprobes value, printed and written to OUT_DIR/nprobes.json.

    python3 bench/scale/nprobes.py OUT_DIR NPROBES...
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summary import top10  # noqa: E402


def main():
    out, probes = sys.argv[1], sys.argv[2:]
    exact = top10(os.path.join(out, "runs-exact", "vector.run"))
    rows = []
    for p in probes:
        approx = top10(os.path.join(out, f"runs-nprobes-{p}", "vector.run"))
        recall = [len(approx.get(q, set()) & docs) / len(docs) for q, docs in exact.items() if docs]
        with open(os.path.join(out, f"vector-nprobes-{p}.json"), encoding="utf-8") as f:
            latency = json.load(f)["stages"][0]["latencyMs"]
        rows.append({"nprobes": int(p), "recallAt10": sum(recall) / len(recall),
                     "p50": latency["p50"], "p99": latency["p99"]})
        print(f"nprobes {p:>3}: recall@10 {rows[-1]['recallAt10']:.4f}, "
              f"vector p50 / p99 {latency['p50']:.2f} / {latency['p99']:.2f} ms")
    with open(os.path.join(out, "nprobes.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
