"""Would a sentence-level dense signal pay as a correction? Offline, over crag's own rankings.

Each of the first `depth` documents of crag's hybrid ranking (and of its hybrid + CRAG ranking)
is scored by the best cosine similarity between the query and one of its sentences (the title
counts as one), with the same int8 MiniLM crag embeds with; that score, min-max normalised,
times `w`, is added to the min-max normalised fused score, and the head is reordered. Prints
nDCG@10 for each aggregation, depth and weight. Sentence embeddings are cached per collection.

    crag eval --dataset D ... --stages hybrid,hybrid+crag --clients 0 --runs RUNS
    python3 bench/quality/sentence_rerank.py D SPLIT QUERIES RUNS CACHE_NAME

(the peers' venv: `bash bench/peers/setup.sh`; figures in docs/benchmarks.md, "Query expansion
off by default").
"""

import os
import pickle
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "peers"))
import numpy as np  # noqa: E402
from script_stack import int8_embedder  # noqa: E402
from seed_stack import ndcg_at_k, read_jsonl, read_qrels  # noqa: E402

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def load_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {}
    for line in path.open():
        query, _, doc, _, score, _ = line.split()
        out.setdefault(query, []).append((doc, float(score)))
    return out


def minmax(values) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    lo, hi = x.min(), x.max()
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def embed_sentences(corpus: dict, queries: dict, qids: list[str], cache: Path):
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    embedder = int8_embedder(Path(os.path.expanduser("~/.cache/crag/assets")))
    spans, texts = {}, []
    for doc, row in corpus.items():
        sentences = [s for s in SENTENCE_END.split(row.get("text", "").strip()) if s.strip()]
        if row.get("title", "").strip():
            sentences = [row["title"].strip()] + sentences
        spans[doc] = (len(texts), len(sentences))
        texts.extend(sentences)
    print(f"{len(texts)} sentences", file=sys.stderr)
    query_vectors = embedder.embed([queries[q] for q in qids])
    result = (spans, embedder.embed(texts), dict(zip(qids, query_vectors)))
    cache.write_bytes(pickle.dumps(result))
    return result


def main() -> None:
    dataset, split, queries_file, runs, name = sys.argv[1:6]
    d = Path(dataset)
    corpus = {r["_id"]: r for r in read_jsonl(d / "corpus.jsonl")}
    queries = {r["_id"]: r["text"] for r in read_jsonl(d / queries_file)}
    qrels_path = d / "qrels" / f"{split}.tsv"
    qrels = read_qrels(qrels_path if qrels_path.exists() else d / "qrels.tsv")
    hybrid = load_run(Path(runs) / "hybrid.run")
    corrected = load_run(Path(runs) / "hybrid+crag.run")
    qids = [q for q in qrels if q in queries and q in hybrid]
    spans, sentences, query_vectors = embed_sentences(
        corpus, queries, qids, Path(runs) / f"sentences-{name}.pkl")

    def mean_ndcg(rank) -> float:
        return float(np.mean([ndcg_at_k(rank(q), qrels[q], 10) for q in qids]))

    def reranked(q, base, depth, weight, aggregate):
        head = base[q][:depth]
        signal = []
        for doc, _ in head:
            start, n = spans[doc]
            sims = np.sort(sentences[start:start + n] @ query_vectors[q])
            signal.append({"max": sims[-1], "top2": sims[-2:].mean(),
                           "max+mean": sims[-1] + 0.5 * sims.mean()}[aggregate])
        score = minmax([s for _, s in head]) + weight * minmax(signal)
        order = np.argsort(-score, kind="stable")
        return [head[i][0] for i in order] + [doc for doc, _ in base[q][depth:]]

    plain = mean_ndcg(lambda q: [x for x, _ in hybrid[q]])
    judged = mean_ndcg(lambda q: [x for x, _ in corrected.get(q, hybrid[q])])
    print(f"{name}: {len(qids)} queries; hybrid {plain:.4f}, hybrid+crag {judged:.4f}")
    for base_name, base in (("hybrid", hybrid), ("hybrid+crag", corrected)):
        for aggregate in ("max", "top2", "max+mean"):
            for depth in (10, 20, 30):
                cells = " ".join(
                    f"w{w:.2f} {mean_ndcg(lambda q: reranked(q, base, depth, w, aggregate)):.4f}"
                    for w in (0.25, 0.5, 1.0, 1.5))
                print(f"{base_name} {aggregate} depth {depth}: {cells}")


if __name__ == "__main__":
    main()
