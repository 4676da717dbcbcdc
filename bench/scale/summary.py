#!/usr/bin/env python3
"""One size's figures of bench/scale/run.sh, printed and written as OUT/summary.json.

    python3 bench/scale/summary.py N OUT_DIR DATA_DIR
"""

import json
import os
import re
import subprocess
import sys


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs)) - 1))] if xs else None


def peak_rss_mib(path):
    with open(path, encoding="utf-8") as f:
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", f.read())
    return int(m.group(1)) / 1024 if m else None


def stages(path):
    """p50 / p99 of each timing of a `crag query --batch --json` report."""
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    timings = [q["timings"] for q in report["queries"]]
    keys = sorted({k for t in timings for k in t})
    return {
        k: {"p50": pct([t.get(k, 0.0) for t in timings], 50),
            "p99": pct([t.get(k, 0.0) for t in timings], 99)}
        for k in keys
    }


def top10(path):
    runs = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            q, _, doc, rank, *_ = line.split()
            if int(rank) <= 10:
                runs.setdefault(q, set()).add(doc)
    return runs


def recall_at_10(exact, path):
    """Mean recall@10 of the run at `path` against `exact`'s top 10s; None without the run."""
    if not os.path.exists(path):
        return None
    approx = top10(path)
    recall = [len(approx.get(q, set()) & docs) / len(docs) for q, docs in exact.items() if docs]
    return sum(recall) / len(recall) if recall else None


def main():
    n, out, data = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    with open(os.path.join(out, "ingest.log"), encoding="utf-8") as f:
        log = re.sub(r"\x1b\[[0-9;]*m", "", f.read())
    tenths = [float(m) for m in re.findall(r"ingest tenth \d+/10: .*?\(([\d.]+) chunks/s\)", log)]
    ann = re.findall(r"built vector ANN index.*?partitions=(\d+).*?seconds=([\d.]+)", log)
    with open(os.path.join(out, "ingest.json"), encoding="utf-8") as f:
        ingest = json.load(f)
    exact = top10(os.path.join(out, "runs-exact", "vector.run"))
    recall = recall_at_10(exact, os.path.join(out, "runs-ann", "vector.run"))
    memory_recall = recall_at_10(exact, os.path.join(out, "runs-memory", "vector.run"))
    disk = int(subprocess.run(["du", "-sb", data], capture_output=True, text=True,
                              check=True).stdout.split()[0])
    summary = {
        "documents": n,
        "chunks": ingest.get("chunksWritten"),
        "ingest_seconds": ingest.get("elapsedSeconds"),
        "ingest_chunks_per_second_by_tenth": tenths,
        "ingest_peak_rss_mib": peak_rss_mib(os.path.join(out, "ingest.time")),
        "ann_partitions": int(ann[-1][0]) if ann else None,
        "ann_build_seconds": float(ann[-1][1]) if ann else None,
        "ann_recall_at_10": recall,
        "memory_recall_at_10": memory_recall,
        "disk_bytes": disk,
        "hybrid": stages(os.path.join(out, "hybrid.json")),
        "crag": stages(os.path.join(out, "crag.json")),
        "serving_peak_rss_mib": {m: peak_rss_mib(os.path.join(out, f"{m}.time"))
                                 for m in ("hybrid", "crag")},
    }
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    h, c = summary["hybrid"], summary["crag"]
    first_last = (f"{tenths[0]:.0f} -> {tenths[-1]:.0f} chunks/s" if len(tenths) >= 2 else "n/a")
    print(f"{n} documents, {summary['chunks']} chunks; ingest {summary['ingest_seconds']} s "
          f"(first tenth -> last: {first_last}), peak RSS {summary['ingest_peak_rss_mib']:.0f} MiB; "
          f"disk {disk / 2**20:.0f} MiB")
    ann_s = summary['ann_build_seconds']
    print(f"  ANN: {summary['ann_partitions']} partitions built in "
          f"{'n/a' if ann_s is None else f'{ann_s:.1f} s'}, recall@10 vs exact "
          f"{summary['ann_recall_at_10']}; in-memory copy recall@10 {memory_recall}")
    for name, t in (("hybrid", h), ("hybrid+crag", c)):
        parts = ", ".join(f"{k[:-2]} {v['p50']:.2f}/{v['p99']:.2f}" for k, v in t.items()
                          if v["p50"] or v["p99"])
        print(f"  {name} p50/p99 ms: {parts}; peak RSS "
              f"{summary['serving_peak_rss_mib'][name.split('+')[-1]]:.0f} MiB")


if __name__ == "__main__":
    main()
