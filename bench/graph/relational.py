#!/usr/bin/env python3
"""nDCG@10 of crag eval's `hybrid` and `hybrid+kg` TREC runs, over all judged queries and over
the queries the router's `relational` rule would send to the knowledge graph (the cues of
crates/crag-routing/src/relational.rs, matched on lowercase words like the router does).

    crag --config kg.toml eval --dataset DATA --split S --stages hybrid,hybrid+kg --runs RUNS
    python3 bench/graph/relational.py DATA S QUERIES.jsonl RUNS

nDCG@10 with linear gains and log2 discounts (pytrec_eval / BEIR); it reproduces crag eval's
means.
"""
import collections
import json
import math
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
data, split, queries, runs_dir = map(pathlib.Path, sys.argv[1:5])
split = str(split)
source = (ROOT / "crates/crag-routing/src/relational.rs").read_text()
cues = [" ".join(re.findall(r'"([^"]+)"', line)) for line in source.splitlines()
        if line.strip().startswith('&["')]

qrels = collections.defaultdict(dict)
for line in (data / "qrels" / f"{split}.tsv").read_text().splitlines():
    p = line.split()
    if len(p) >= 3 and p[0] != "query-id":
        qrels[p[0]][p[1]] = int(p[2])
texts = {}
for line in queries.read_text().splitlines():
    q = json.loads(line)
    texts[q["_id"]] = q["text"]


def ranking(stage):
    runs = collections.defaultdict(list)
    for line in (runs_dir / f"{stage}.run").read_text().splitlines():
        q, _, doc, rank, _, _ = line.split()
        runs[q].append((int(rank), doc))
    return {q: [d for _, d in sorted(v)] for q, v in runs.items()}


def ndcg(q, ranked):
    rel = qrels[q]
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted((g for g in rel.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def relational(q):
    words = " " + " ".join(re.findall(r"[a-z0-9']+", texts[q].lower())) + " "
    return any(f" {c} " in words for c in cues)


hybrid, graph = ranking("hybrid"), ranking("hybrid+kg")
judged = [q for q in qrels if any(g > 0 for g in qrels[q].values()) and q in texts]
for name, group in [("all", judged), ("relational", [q for q in judged if relational(q)])]:
    a = [ndcg(q, hybrid.get(q, [])) for q in group]
    b = [ndcg(q, graph.get(q, [])) for q in group]
    up = sum(y > x + 1e-9 for x, y in zip(a, b))
    down = sum(y < x - 1e-9 for x, y in zip(a, b))
    n = max(1, len(group))
    print(f"{name}: {len(group)} queries, hybrid {sum(a) / n:.4f}, hybrid+kg {sum(b) / n:.4f}, "
          f"raised {up}, lowered {down}")
