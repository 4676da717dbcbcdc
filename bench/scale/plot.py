#!/usr/bin/env python3
"""p50 per stage against the corpus's size, from bench/scale/run.sh's summaries, as a PNG.

    python3 bench/scale/plot.py WORK_DIR OUT_PNG
needs matplotlib (e.g. a venv: python3 -m venv V && V/bin/pip install matplotlib==3.11.2).
"""

import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# (label, summary's mode, timing key)
STAGES = [
    ("BM25 leg", "hybrid", "keywordMs"),
    ("query embedding", "hybrid", "embedMs"),
    ("vector leg", "hybrid", "vectorMs"),
    ("fusion", "hybrid", "fusionMs"),
    ("hybrid (whole query)", "hybrid", "totalMs"),
    ("judge (evaluate)", "crag", "evaluateMs"),
    ("hybrid + CRAG (whole query)", "crag", "totalMs"),
]


def main():
    work, png = sys.argv[1:3]
    summaries = []
    for path in glob.glob(os.path.join(work, "n*", "summary.json")):
        with open(path, encoding="utf-8") as f:
            summaries.append(json.load(f))
    summaries.sort(key=lambda s: s["chunks"])
    if not summaries:
        sys.exit(f"plot.py: no summary.json under {work}/n*/")
    fig, ax = plt.subplots(figsize=(8, 5))
    sizes = [s["chunks"] for s in summaries]
    for label, mode, key in STAGES:
        p50 = [s[mode].get(key, {}).get("p50") for s in summaries]
        if any(v is not None for v in p50):
            ax.plot(sizes, [v if v is not None else float("nan") for v in p50], marker="o",
                    label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks in the index")
    ax.set_ylabel("p50 (ms)")
    ax.set_title("crag: query p50 per stage against corpus size (synthetic vectors)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"plot.py: wrote {png}")


if __name__ == "__main__":
    main()
