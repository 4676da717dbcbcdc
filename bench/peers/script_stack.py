#!/usr/bin/env python3
"""The retrieval a Python user writes in an afternoon, measured on a BEIR collection beside
`crag eval` (issue 38's peer).

Stages (names as in `crag eval` where they match):

- ``bm25``: ``bm25s`` (Lucene's BM25: k1 1.2, b 0.75) over ``title + "\\n" + text`` of whole
  documents, ``bm25s.tokenize`` with its English stop words (Lucene's 33) and PyStemmer's
  English Snowball stemmer; score-0 padding dropped.
- ``vector``: the int8 all-MiniLM-L6-v2 crag uses (``model_int8`` of crag's asset manifest) in
  ONNX Runtime, one vector per document of ``title + "\\n" + text`` truncated at 256 tokens,
  mean pooled and normalised (seed_stack.py's ``Embedder``); exact numpy dot product.
- ``hybrid``: a convex combination 0.5 / 0.5 of the two legs' min-max-normalised top 100.
- ``lancedb-hybrid``: LanceDB Python's own hybrid search over the same vectors and text
  (native full-text index ``FTS()`` on the text, vector search, its default RRF reranker).

Latency is per query, sequential, over the query part only. Reports have seed_stack.py's
shape, so compare.py reads them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("LANCEDB_LOG", "error")
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from seed_stack import (  # noqa: E402
    Collection,
    Embedder,
    corpus_embeddings,
    document_texts,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    read_collection,
    recall_at_k,
    top,
)

DEPTH = 100
KEYWORD_WEIGHT = 0.5
STAGES = ("bm25", "vector", "hybrid", "lancedb-hybrid")


def int8_embedder(assets_dir: Path) -> Embedder:
    """seed_stack's embedder on crag's int8 model (what crag embeds new indexes with)."""
    import onnxruntime as ort

    embedder = Embedder(assets_dir)
    manifest = json.loads((assets_dir / "manifest.json").read_text())
    path = manifest["embedder"].get("model_int8")
    if not path or not Path(path).is_file():
        sys.exit(f"script_stack: no int8 model in {assets_dir}/manifest.json; "
                 "run scripts/setup-assets.sh")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    embedder.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    embedder.model_sha256 = manifest.get("sha256", {}).get(
        "all-MiniLM-L6-v2/model-int8.onnx", "int8")
    return embedder


def minmax(hits: list[tuple[int, float]]) -> dict[int, float]:
    """Min-max normalises a leg's scores (all equal: 1)."""
    if not hits:
        return {}
    scores = [s for _, s in hits]
    lo, hi = min(scores), max(scores)
    return {d: (s - lo) / (hi - lo) if hi > lo else 1.0 for d, s in hits}


class ScriptStack:
    """bm25s + MiniLM + convex fusion, and LanceDB's hybrid search, over one collection."""

    def __init__(self, c: Collection, embedder: Embedder, matrix: np.ndarray, lance_dir: Path):
        import bm25s
        import Stemmer

        self.c, self.embedder, self.matrix = c, embedder, matrix
        self.stemmer = Stemmer.Stemmer("english")
        started = time.perf_counter()
        corpus = document_texts(c)
        tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.bm25 = bm25s.BM25(k1=1.2, b=0.75)
        self.bm25.index(tokens, show_progress=False)
        self.bm25_seconds = time.perf_counter() - started
        started = time.perf_counter()
        self.lance = self._lance_table(lance_dir, corpus)
        self.lance_seconds = time.perf_counter() - started

    def _lance_table(self, directory: Path, corpus: list[str]):
        import lancedb
        import pyarrow as pa
        from lancedb.index import FTS

        db = lancedb.connect(str(directory))
        data = pa.table({
            "doc": pa.array(list(range(len(corpus))), pa.int64()),
            "text": pa.array(corpus, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(self.matrix.reshape(-1), pa.float32()), self.matrix.shape[1]),
        })
        table = db.create_table("docs", data, mode="overwrite")
        table.create_index("text", config=FTS())
        return table

    def bm25_leg(self, query: str) -> list[tuple[int, float]]:
        """The top 100 documents by BM25 with a positive score."""
        import bm25s

        q = bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        k = min(DEPTH, len(self.c.doc_ids))
        docs, scores = self.bm25.retrieve(q, k=k, show_progress=False, n_threads=1)
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0]) if s > 0]

    def vector_leg(self, query: str) -> tuple[list[tuple[int, float]], np.ndarray]:
        """The top 100 documents by cosine, and the query vector."""
        q = self.embedder.embed([query])[0]
        scores = self.matrix @ q
        return [(d, float(scores[d])) for d in top(scores, DEPTH)], q

    def run(self, stage: str, query: str) -> list[int]:
        """The ranking of `stage` for `query`, best first."""
        if stage == "bm25":
            return [d for d, _ in self.bm25_leg(query)]
        if stage == "vector":
            return [d for d, _ in self.vector_leg(query)[0]]
        if stage == "hybrid":
            keyword, vector = minmax(self.bm25_leg(query)), minmax(self.vector_leg(query)[0])
            fused = {d: KEYWORD_WEIGHT * s for d, s in keyword.items()}
            for d, s in vector.items():
                fused[d] = fused.get(d, 0.0) + (1.0 - KEYWORD_WEIGHT) * s
            return sorted(fused, key=lambda d: (-fused[d], d))[:DEPTH]
        if stage == "lancedb-hybrid":
            q = self.embedder.embed([query])[0]
            rows = (self.lance.search(query_type="hybrid")
                    .vector(q.tolist()).text(query).limit(DEPTH)
                    .select(["doc"]).to_list())
            return [int(r["doc"]) for r in rows]
        raise ValueError(stage)


def measure(stack: ScriptStack) -> list[dict]:
    """Runs every judged query through every stage."""
    c = stack.c
    for stage in STAGES:  # warm-up, not timed
        stack.run(stage, "warm-up query")
    stages = []
    for stage in STAGES:
        latencies, sums = [], [0.0, 0.0, 0.0, 0.0]
        for qid, text in c.queries:
            started = time.perf_counter()
            ranking = stack.run(stage, text)
            latencies.append((time.perf_counter() - started) * 1000.0)
            ranked = [c.doc_ids[d] for d in ranking]
            j = c.qrels[qid]
            sums[0] += ndcg_at_k(ranked, j, 10)
            sums[1] += recall_at_k(ranked, j, 10)
            sums[2] += recall_at_k(ranked, j, 100)
            sums[3] += mrr_at_k(ranked, j, 10)
        n = len(c.queries)
        stages.append({
            "stage": stage,
            "ndcgAt10": sums[0] / n,
            "recallAt10": sums[1] / n,
            "recallAt100": sums[2] / n,
            "mrrAt10": sums[3] / n,
            "latencyMs": {p: percentile(latencies, x)
                          for p, x in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))},
            "clients": 1,
            "queriesPerSecond": n / (sum(latencies) / 1000.0) if sum(latencies) else None,
        })
        print(f"stage {stage} done", file=sys.stderr)
    return stages


def load(directory: Path, split: str, queries: Path | None, limit: int | None) -> Collection:
    """The collection; with `queries`, its judged queries come from that file instead."""
    if queries is None:
        return read_collection(directory, split, limit)
    import seed_stack

    plain = seed_stack.read_jsonl
    seed_stack.read_jsonl = lambda p: plain(queries if p.name == "queries.jsonl" else p)
    try:
        return read_collection(directory, split, limit)
    finally:
        seed_stack.read_jsonl = plain


def main(argv: list[str] | None = None) -> None:
    """Builds the stack over the collection, measures it and reports."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset", type=Path, help="BEIR collection directory")
    p.add_argument("--split", default="test", help="qrels split (qrels/<split>.tsv)")
    p.add_argument("--queries", type=Path, help="queries file (default <dataset>/queries.jsonl)")
    p.add_argument("--limit", type=int, help="evaluate only the first N judged queries")
    p.add_argument("--assets-dir", type=Path, default=Path.home() / ".cache/crag/assets")
    p.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache/crag/peer",
                   help="root of the corpus embedding cache")
    p.add_argument("--json", type=Path, help="write the report as JSON to this file")
    args = p.parse_args(argv)
    embedder = int8_embedder(args.assets_dir)
    c = load(args.dataset, args.split, args.queries, args.limit)
    print(f"{c.name}: {len(c.doc_ids)} documents, {len(c.queries)} judged queries",
          file=sys.stderr)
    matrix, embed_seconds, cache = corpus_embeddings(embedder, c, args.cache_dir)
    with tempfile.TemporaryDirectory(prefix="script-stack-lance-") as lance_dir:
        stack = ScriptStack(c, embedder, matrix, Path(lance_dir))
        stages = measure(stack)
    report = {
        "stack": "a user's afternoon script (bm25s + int8 MiniLM + convex 0.5/0.5) "
                 "and LanceDB Python hybrid (FTS + vectors, RRF)",
        "dataset": str(args.dataset),
        "split": args.split,
        "queries": len(c.queries),
        "documents": len(c.doc_ids),
        "bm25Tokenizer": "bm25s.tokenize, English stop words, PyStemmer english",
        "build": {
            "bm25Seconds": stack.bm25_seconds,
            "lanceSeconds": stack.lance_seconds,
            "embedSeconds": embed_seconds,
            "embeddingsCache": str(cache),
        },
        "stages": stages,
        "peakRssBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "versions": {"python": platform.python_version(),
                     **{n: version(n) for n in ("bm25s", "PyStemmer", "lancedb", "numpy",
                                                "onnxruntime", "tokenizers")}},
    }
    print(f"{'stage':<15} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7} {'p50 ms':>8}")
    for s in stages:
        print(f"{s['stage']:<15} {s['ndcgAt10']:>8.4f} {s['recallAt10']:>7.4f} "
              f"{s['recallAt100']:>7.4f} {s['mrrAt10']:>7.4f} {s['latencyMs']['p50']:>8.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"report written to {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
