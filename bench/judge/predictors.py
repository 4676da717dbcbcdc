"""Label-free query-performance predictors against `crag eval --ablate`'s answerability.

    crag eval --dataset DIR --ablate 0.5 --seed 7 --stages bm25,vector,hybrid,hybrid+crag \
        --clients 0 --runs RUNS
    python3 bench/judge/predictors.py RUNS DIR/qrels/test.tsv

A query is answerable when the hybrid top 10 holds a relevant document (as `crag eval`'s
evaluator report counts it). Each predictor is computed per query from the BM25, vector and
hybrid runs (documents, their first chunk's rank and score) and scored by its AUROC: score
levels and gaps of each leg, and the two legs' agreement (overlap at k, rank-biased overlap
over the whole runs, and over the hybrid top 10's leg ranks only, which is what the heuristic
evaluator sees).
"""
import collections
import statistics
import sys


def load_qrels(path):
    qrels = collections.defaultdict(dict)
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[0] != "query-id":
                qrels[p[0]][p[1]] = int(p[2])
    return qrels


def load_run(path):
    run = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            q, _, d, _, score, _ = line.split()
            run[q].append((d, float(score)))
    return run


def auroc(scores, labels):
    pos = [s for s, l in zip(scores, labels) if l]
    neg = [s for s, l in zip(scores, labels) if not l]
    if not pos or not neg:
        return float("nan")
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def rbo(a, b, p, depth):
    """Rank-biased overlap of two id lists down to `depth`, normalised so equal lists give 1."""
    seen_a, seen_b, total = set(), set(), 0.0
    for d in range(1, depth + 1):
        if d <= len(a):
            seen_a.add(a[d - 1])
        if d <= len(b):
            seen_b.add(b[d - 1])
        total += p ** (d - 1) * len(seen_a & seen_b) / d
    return total * (1 - p) / (1 - p ** depth)


def judged_rbo(leg_ranks, p):
    """The heuristic's leg agreement: RBO from the judged documents' (keyword, vector) ranks."""
    n = len(leg_ranks)
    total = sum(p ** (d - 1) * sum(1 for k, v in leg_ranks if max(k, v) <= d) / d
                for d in range(1, n + 1))
    return total * (1 - p) / (1 - p ** n) if n else 0.0


def main():
    runs, qrels = sys.argv[1], load_qrels(sys.argv[2])
    bm, vec, hyb = (load_run(f"{runs}/{s}.run") for s in ("bm25", "vector", "hybrid"))
    queries = [q for q in hyb if q in qrels]
    labels = [any(qrels[q].get(d, 0) > 0 for d, _ in hyb[q][:10]) for q in queries]
    features = collections.defaultdict(list)
    for q in queries:
        b = [s for _, s in bm.get(q, [])] or [0.0]
        v = [s for _, s in vec.get(q, [])] or [0.0]
        b_ids = [d for d, _ in bm.get(q, [])]
        v_ids = [d for d, _ in vec.get(q, [])]
        features["bm25 top1"].append(b[0])
        features["bm25 top1 - mean100"].append(b[0] - statistics.mean(b[:100]))
        features["bm25 top1 / mean100"].append(b[0] / max(1e-9, statistics.mean(b[:100])))
        features["vector top1"].append(v[0])
        features["vector mean10"].append(statistics.mean(v[:10]))
        features["vector top1 - mean100"].append(v[0] - statistics.mean(v[:100]))
        for k in (3, 10):
            features[f"legs overlap@{k}"].append(len(set(b_ids[:k]) & set(v_ids[:k])))
        features["legs RBO p0.9 (runs, depth 100)"].append(rbo(b_ids, v_ids, 0.9, 100))
        b_rank = {d: i + 1 for i, d in enumerate(b_ids)}
        v_rank = {d: i + 1 for i, d in enumerate(v_ids)}
        leg_ranks = [(b_rank.get(d, 10**6), v_rank.get(d, 10**6)) for d, _ in hyb[q][:10]]
        for p in (0.8, 0.9, 0.95):
            features[f"legs RBO p{p} (judged top 10)"].append(judged_rbo(leg_ranks, p))
    print(f"{len(queries)} queries, {sum(labels)} answerable")
    for name, values in sorted(features.items(), key=lambda kv: -auroc(kv[1], labels)):
        print(f"{name:<34} AUROC {auroc(values, labels):.3f}")


if __name__ == "__main__":
    main()
