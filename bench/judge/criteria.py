"""The heuristic evaluator's criteria against `crag eval --ablate`'s answerability, and what a
further label-free criterion would add to its AUROC.

    crag eval --dataset DIR --ablate 0.5 --seed 7 --stages bm25,vector,hybrid,hybrid+crag \
        --clients 0 --runs RUNS
    python3 bench/judge/criteria.py RUNS DIR/qrels/test.tsv [RUNS2 QRELS2 ...]

Reads RUNS/judgements.jsonl (each query's judgement of the hybrid + CRAG stage) and the TREC
runs beside it. A query is answerable when the hybrid top 10 holds a relevant document, as the
evaluator report counts it. Prints the AUROC of the evaluator's score and of each criterion,
then of the score with one candidate criterion added at weight w, as the heuristic would add
it (the weighted mean: rank-equivalent to `score * W + w * x`, W the weights' sum). Each
candidate is read from what the judge is shown of the hybrid top 10 (each document's BM25 and
vector scores, as the runs give them) and lies in [0, 1]:

- keyword separation: 1 - (lowest / highest BM25 score among the ten);
- vector separation: the highest minus the lowest cosine among the ten, over 0.3, capped at 1;
- vector level: the highest cosine, ramped between the heuristic's floor 0.2 and ceiling 0.7.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from predictors import auroc, load_qrels, load_run  # noqa: E402

WEIGHTS = (0.25, 0.5, 1.0, 2.0)


def candidates(top10, bm, vec):
    b = [bm[d] for d in top10 if d in bm]
    # The runs' vector scores are 1 - cosine distance / 2: back to the cosine.
    v = [2.0 * vec[d] - 1.0 for d in top10 if d in vec]
    keyword = 1.0 - min(b) / max(b) if b and max(b) > 0 else 0.0
    spread = min(1.0, (max(v) - min(v)) / 0.3) if v else 0.0
    level = min(1.0, max(0.0, (max(v) - 0.2) / 0.5)) if v else 0.0
    return {"keyword separation": keyword, "vector separation": spread, "vector level": level}


def study(runs, qrels_path):
    qrels = load_qrels(qrels_path)
    hyb = load_run(f"{runs}/hybrid.run")
    bm = {q: dict(r) for q, r in load_run(f"{runs}/bm25.run").items()}
    vec = {q: dict(r) for q, r in load_run(f"{runs}/vector.run").items()}
    rows = []
    with open(f"{runs}/judgements.jsonl") as f:
        for line in f:
            j = json.loads(line)
            q, e = j["query"], j["evaluation"]
            if e is None or q not in qrels or q not in hyb:
                continue
            top10 = [d for d, _ in hyb[q][:10]]
            label = any(qrels[q].get(d, 0) > 0 for d in top10)
            criteria = {c["name"]: (c["score"], c["weight"]) for c in e["criteria"]}
            rows.append((label, e["score"], criteria,
                         candidates(top10, bm.get(q, {}), vec.get(q, {}))))
    labels = [r[0] for r in rows]
    print(f"{runs}: {len(rows)} judged queries, {sum(labels)} answerable")
    print(f"  evaluator score                 AUROC {auroc([r[1] for r in rows], labels):.3f}")
    for name in rows[0][2]:
        values = [r[2].get(name, (0.0, 0.0))[0] for r in rows]
        print(f"  criterion {name:<21} AUROC {auroc(values, labels):.3f}")
    for name in rows[0][3]:
        alone = auroc([r[3][name] for r in rows], labels)
        added = []
        for w in WEIGHTS:
            scores = [r[1] * sum(wt for _, wt in r[2].values()) + w * r[3][name] for r in rows]
            added.append(f"w {w}: {auroc(scores, labels):.3f}")
        print(f"  + {name:<29} alone {alone:.3f}; added {', '.join(added)}")


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        sys.exit(__doc__)
    for runs, qrels in zip(args[::2], args[1::2]):
        study(runs, qrels)


if __name__ == "__main__":
    main()
