#!/usr/bin/env python3
"""Offline sweep of fusion functions over the legs' TREC runs written by `crag eval --runs`.

    crag eval --dataset DIR --stages bm25,vector,hybrid --runs RUNS --clients 0
    python3 bench/fusion/sweep.py RUNS DIR/qrels/test.tsv

Reads RUNS/bm25.run and RUNS/vector.run (one line per document at its best chunk, with the
leg's score) and prints nDCG@10 of each leg, of RRF over several constants and of the convex
combination of min-max-normalised scores over several keyword weights, and with a weight per
query read from the legs' own score curves (no labels: the leg whose 10th score falls
further below its first gets more weight; or the legs' z-scored top scores). The simulation fuses
*documents* (each at its best chunk), while the engine fuses chunks: use it to choose a
parameter on a training split, then confirm with `crag eval` (CRAG_RETRIEVAL__FUSION,
CRAG_RETRIEVAL__KEYWORD_WEIGHT, CRAG_RETRIEVAL__RRF_K) on held-out queries.
Standard library only.
"""

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path


def read_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    """qid -> [(docid, score)] in rank order."""
    run: dict[str, list[tuple[str, float]]] = defaultdict(list)
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                qid, _, doc, _, score, _ = line.split()
                run[qid].append((doc, float(score)))
    except (OSError, ValueError) as e:
        sys.exit(f"sweep: cannot read {path}: {e}")
    return run


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """qid -> {docid: grade}; a header line (non-numeric grade) is skipped."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 3 or not fields[-1].lstrip("-").isdigit():
                continue
            qrels[fields[0]][fields[1]] = int(fields[-1])
    return qrels


def ndcg_at_10(ranked: list[str], judged: dict[str, int]) -> float:
    """Linear-gain nDCG@10, as `crag eval` computes it."""
    dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def rrf(legs: list[list[tuple[str, float]]], k: float) -> list[str]:
    scores: dict[str, float] = defaultdict(float)
    for leg in legs:
        for i, (doc, _) in enumerate(leg):
            scores[doc] += 1.0 / (k + i + 1)
    return sorted(scores, key=lambda d: -scores[d])


def min_max(leg: list[tuple[str, float]]) -> dict[str, float]:
    if not leg:
        return {}
    low, high = min(s for _, s in leg), max(s for _, s in leg)
    return {d: (s - low) / (high - low) if high > low else 1.0 for d, s in leg}


def convex(keyword, vector, weight: float) -> list[str]:
    k, v = min_max(keyword), min_max(vector)
    scores = {d: weight * k.get(d, 0.0) + (1 - weight) * v.get(d, 0.0) for d in k.keys() | v.keys()}
    return sorted(scores, key=lambda d: -scores[d])


def peak(leg: list[tuple[str, float]], depth: int) -> float:
    """How far below the leg's first min-max-normalised score its `depth`-th falls."""
    scores = [s for _, s in sorted(min_max(leg).items(), key=lambda x: -x[1])]
    return 1.0 - scores[min(depth, len(scores)) - 1] if scores else 0.0


def top_z(leg: list[tuple[str, float]]) -> float:
    """The leg's first score in standard deviations above its mean."""
    scores = [s for _, s in leg]
    if len(scores) < 2:
        return 0.0
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return (max(scores) - mean) / sd if sd > 0 else 0.0


def adaptive_weight(keyword, vector, signal, strength: float) -> float:
    """0.5 moved towards the keyword leg's share of `signal` by `strength`."""
    k, v = signal(keyword), signal(vector)
    share = k / (k + v) if k + v > 0 else 0.5
    return 0.5 + strength * (share - 0.5)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", type=Path, help="directory of `crag eval --runs`")
    p.add_argument("qrels", type=Path, help="qrels of the queries the runs answered")
    a = p.parse_args()
    keyword, vector = read_run(a.runs / "bm25.run"), read_run(a.runs / "vector.run")
    qrels = read_qrels(a.qrels)
    queries = [q for q in qrels if q in keyword or q in vector]
    if not queries:
        sys.exit("sweep: no query of the qrels is in the runs")

    def mean(rank) -> float:
        return sum(ndcg_at_10(rank(q), qrels[q]) for q in queries) / len(queries)

    print(f"{len(queries)} queries")
    print(f"bm25                 {mean(lambda q: [d for d, _ in keyword[q]]):.4f}")
    print(f"vector               {mean(lambda q: [d for d, _ in vector[q]]):.4f}")
    for k in (10, 30, 60, 100):
        print(f"rrf k={k:<14} {mean(lambda q: rrf([keyword[q], vector[q]], k)):.4f}")
    for w in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        print(f"convex weight={w:<6} {mean(lambda q: convex(keyword[q], vector[q], w)):.4f}")
    signals = [(f"peak@{d}", lambda leg, d=d: peak(leg, d)) for d in (5, 10, 20)]
    for name, signal in signals + [("top z", top_z)]:
        for strength in (0.5, 1.0):
            label = f"per query {name} x{strength}"

            def fused(q, signal=signal, strength=strength):
                w = adaptive_weight(keyword[q], vector[q], signal, strength)
                return convex(keyword[q], vector[q], w)

            print(f"{label:<20} {mean(fused):.4f}")


if __name__ == "__main__":
    main()
