#!/usr/bin/env python3
"""The seeds' Python retrieval stack, measured on a BEIR collection beside `crag eval`.

Stages (names as in `crag eval`):

- ``bm25``: ``rank_bm25.BM25Okapi`` (k1 1.5, b 0.75, epsilon 0.25, its defaults) over
  ``title + " " + text``, tokenised by :func:`tokenize` (lowercase, regex ``\\w+``; no stemming,
  no stop words); documents matching no query term are left out.
- ``vector``: all-MiniLM-L6-v2 from crag's own assets (``manifest.json``) in ONNX Runtime, one
  vector per document of ``title + "\\n" + text`` truncated at the manifest's ``max_length``
  (256) tokens, mean pooling over the attention mask and L2 normalisation as crag-onnx does;
  brute-force cosine (a numpy dot product).
- ``hybrid``: reciprocal rank fusion, k = 60, of the top 100 of each leg.
- ``hybrid+crag``: the hybrid top k judged by seed 000's heuristic evaluator (keyword overlap
  0.30, semantic coherence 0.40, length adequacy 0.15, diversity 0.15; correct > 0.75,
  ambiguous > 0.50). The ranking stays the hybrid one, cut at k; no correction is applied.

Latency is measured per query, sequentially, over the query part only (tokenising or embedding
the query, searching, fusing, judging). ONNX Runtime uses its default intra-op threads (one per
core) with spinning off; OpenBLAS one thread. Corpus embeddings are cached in
``$HOME/.cache/crag/peer/<collection>/`` keyed by the corpus file, the model and the length.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import re
import resource
import sys
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

# One BLAS thread: the query-vector products are tiny, and a second pool spinning beside ONNX
# Runtime's on 2 cores doubled the vector leg's latency.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

STAGES = ("bm25", "vector", "hybrid", "hybrid+crag")
DEPTH = 100
RRF_K = 60
WORD = re.compile(r"\w+")
EMBED_BATCH = 32
# Seed 000, `CRAGEvaluator`.
SEED_WEIGHTS = {
    "keyword_overlap": 0.30,
    "semantic_coherence": 0.40,
    "length_adequacy": 0.15,
    "diversity": 0.15,
}
SEED_STOPWORDS = frozenset(
    "a an and are as at be by for from has he in is it its of on that the to was will with "
    "what how".split()
)


def tokenize(text: str) -> list[str]:
    """Returns the BM25 terms of `text`: lowercased runs of regex ``\\w`` characters."""
    return WORD.findall(text.lower())


@dataclass
class Collection:
    """A BEIR collection: documents, judged queries and graded judgements."""

    name: str
    corpus_path: Path
    doc_ids: list[str]
    titles: list[str]
    texts: list[str]
    queries: list[tuple[str, str]]
    qrels: dict[str, dict[str, int]]


def read_jsonl(path: Path) -> list[dict]:
    """Reads one JSON object per non-empty line."""
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Reads a BEIR qrels TSV (query-id, corpus-id, grade; header optional)."""
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) < 3 or not fields[2].lstrip("-").isdigit():
            continue
        qrels.setdefault(fields[0], {})[fields[1]] = max(int(fields[2]), 0)
    if not qrels:
        sys.exit(f"seed_stack: no judgements in {path}")
    return qrels


def read_collection(directory: Path, split: str, limit: int | None) -> Collection:
    """Reads corpus.jsonl, queries.jsonl and qrels/<split>.tsv (or qrels.tsv) of `directory`.

    Records without title and text are skipped (as crag does); only judged queries are kept.
    """
    corpus_path = directory / "corpus.jsonl"
    if not corpus_path.is_file():
        sys.exit(f"seed_stack: {directory} has no corpus.jsonl")
    qrels_path = directory / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        qrels_path = directory / "qrels.tsv"
    qrels = read_qrels(qrels_path)
    doc_ids, titles, texts = [], [], []
    for record in read_jsonl(corpus_path):
        title, text = record.get("title") or "", record.get("text") or ""
        if title.strip() or text.strip():
            doc_ids.append(str(record["_id"]))
            titles.append(title)
            texts.append(text)
    queries = [
        (str(q["_id"]), q["text"])
        for q in read_jsonl(directory / "queries.jsonl")
        if str(q["_id"]) in qrels
    ][:limit]
    if not queries:
        sys.exit(f"seed_stack: no query of {directory} has judgements in {qrels_path}")
    return Collection(
        directory.resolve().name, corpus_path, doc_ids, titles, texts, queries, qrels
    )


class Embedder:
    """all-MiniLM-L6-v2 in ONNX Runtime, pooled and normalised as crag-onnx does."""

    def __init__(self, assets_dir: Path):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        manifest_path = assets_dir / "manifest.json"
        if not manifest_path.is_file():
            sys.exit(f"seed_stack: {manifest_path} is missing; run scripts/setup-assets.sh")
        manifest = json.loads(manifest_path.read_text())
        spec = manifest["embedder"]
        self.max_length = int(spec["max_length"])
        self.dimension = int(spec["dimension"])
        self.model_sha256 = manifest.get("sha256", {}).get("all-MiniLM-L6-v2/model.onnx", "")
        self.tokenizer = Tokenizer.from_file(spec["tokenizer"])
        # tokenizer.json pads and truncates at 128: pad per batch instead, truncate at 256.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_length)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle intra-op threads sleep instead of spinning, so they do not take the CPU from
        # BM25 between queries (spinning doubled the hybrid latency on a busy 2-core machine).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            spec["model"], options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """Returns one unit vector per text (float32 rows), batching texts of similar length."""
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), EMBED_BATCH):
            rows = order[start : start + EMBED_BATCH]
            seq = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), seq), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
                types[r, :n] = encodings[i].type_ids
            (hidden,) = self.session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
            )
            summed = (hidden * mask[:, :, None]).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[rows] = pooled / norms
            done = start + len(rows)
            if progress and (done % (20 * EMBED_BATCH) == 0 or done == len(texts)):
                print(f"embedded {done}/{len(texts)} documents", file=sys.stderr)
        return out


def check_embedder(embedder: Embedder) -> None:
    """Prints the published sentence-transformers check (expected 0.6660, 0.1046, 0.1411)."""
    v = embedder.embed(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    print(f"cos(0,1)={v[0] @ v[1]:.4f} cos(0,2)={v[0] @ v[2]:.4f} cos(1,2)={v[1] @ v[2]:.4f}")


def document_texts(c: Collection) -> list[str]:
    """Returns what is embedded and judged per document: title, newline, text (as crag)."""
    return [f"{t}\n{x}" if t.strip() else x for t, x in zip(c.titles, c.texts)]


def corpus_embeddings(
    embedder: Embedder, c: Collection, cache_root: Path
) -> tuple[np.ndarray, float, Path]:
    """Returns the corpus matrix, the seconds spent embedding (0 when cached) and the cache file."""
    key = hashlib.sha256()
    key.update(c.corpus_path.read_bytes())
    key.update(f"|{embedder.model_sha256}|{embedder.max_length}|title-newline-text".encode())
    cache = cache_root / c.name / f"embeddings-{key.hexdigest()[:16]}.npy"
    if cache.is_file():
        matrix = np.load(cache)
        if matrix.shape[0] == len(c.doc_ids):
            return matrix, 0.0, cache
    started = time.perf_counter()
    matrix = embedder.embed(document_texts(c), progress=True)
    seconds = time.perf_counter() - started
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(".partial.npy")
    np.save(partial, matrix)
    partial.replace(cache)
    return matrix, seconds, cache


def top(scores: np.ndarray, k: int) -> list[int]:
    """Returns the indices of the `k` highest scores, best first (ties by index)."""
    k = min(k, len(scores))
    cut = np.argpartition(-scores, k - 1)[:k]
    return sorted(cut.tolist(), key=lambda i: (-scores[i], i))


def rrf(keyword: list[int], vector: list[int], k: int = RRF_K) -> list[int]:
    """Fuses two rankings: sum of 1 / (k + rank), rank from 1; ties by keyword, vector rank."""
    ranks: dict[int, list[float]] = {}
    for leg, ranking in enumerate((keyword, vector)):
        for rank, doc in enumerate(ranking, start=1):
            ranks.setdefault(doc, [math.inf, math.inf])[leg] = rank
    fused = {d: sum(1.0 / (k + r) for r in rs if r != math.inf) for d, rs in ranks.items()}
    return sorted(fused, key=lambda d: (-fused[d], ranks[d][0], ranks[d][1], d))


def seed_evaluate(query: str, contents: list[str], sims: list[float], sources: list[str]) -> dict:
    """Seed 000's `CRAGEvaluator.evaluate`, as written there.

    Keywords: ``query.lower().split()`` minus the seed's stop words and tokens of <= 2 chars,
    matched as substrings of the joined lowercased contents; coherence ``mean * (1 - min(var,
    0.3))`` of the similarities, clipped to [0, 1]; length ``sum(int(words * 1.3))`` over
    ``100 * n``, capped at 1; diversity distinct sources over n. Verdicts use crag's names:
    correct (seed RELEVANT) > 0.75, ambiguous (PARTIAL) > 0.50, else incorrect.
    """
    if not contents:
        return {"score": 0.0, "verdict": "incorrect"}
    keywords = [t for t in query.lower().split() if t not in SEED_STOPWORDS and len(t) > 2]
    combined = " ".join(c.lower() for c in contents)
    overlap = sum(k in combined for k in keywords) / len(keywords) if keywords else 0.0
    s = np.asarray(sims, dtype=np.float64)
    coherence = float(np.clip(s.mean() * (1.0 - min(float(s.var()), 0.3)), 0.0, 1.0))
    tokens = sum(int(len(c.split()) * 1.3) for c in contents)
    length = min(tokens / (100 * len(contents)), 1.0)
    diversity = min(len(set(sources)) / len(contents), 1.0)
    criteria = {
        "keyword_overlap": overlap,
        "semantic_coherence": coherence,
        "length_adequacy": length,
        "diversity": diversity,
    }
    score = sum(SEED_WEIGHTS[name] * value for name, value in criteria.items())
    verdict = "correct" if score > 0.75 else "ambiguous" if score > 0.50 else "incorrect"
    return {"score": score, "verdict": verdict, "criteria": criteria}


class SeedStack:
    """The indexes of one collection and the four stages over them."""

    def __init__(self, c: Collection, embedder: Embedder, matrix: np.ndarray, top_k: int):
        from rank_bm25 import BM25Okapi

        self.c = c
        self.embedder = embedder
        self.matrix = matrix
        self.top_k = top_k
        self.contents = document_texts(c)
        started = time.perf_counter()
        self.bm25 = BM25Okapi([tokenize(f"{t} {x}") for t, x in zip(c.titles, c.texts)])
        self.bm25_seconds = time.perf_counter() - started

    def bm25_leg(self, query: str) -> list[int]:
        """Returns the top 100 documents by BM25 that match at least one query term."""
        scores = self.bm25.get_scores(tokenize(query))
        return [d for d in top(scores, DEPTH) if scores[d] > 0]

    def vector_leg(self, query: str) -> tuple[list[int], np.ndarray]:
        """Returns the top 100 documents by cosine and the query vector."""
        q = self.embedder.embed([query])[0]
        return top(self.matrix @ q, DEPTH), q

    def run(self, stage: str, query: str) -> tuple[list[int], dict | None]:
        """Runs `query` through `stage`; returns the ranking and, for hybrid+crag, the verdict."""
        if stage == "bm25":
            return self.bm25_leg(query), None
        if stage == "vector":
            return self.vector_leg(query)[0], None
        keyword = self.bm25_leg(query)
        vector, q = self.vector_leg(query)
        fused = rrf(keyword, vector)[:DEPTH]
        if stage == "hybrid":
            return fused, None
        kept = fused[: self.top_k]
        judged = seed_evaluate(
            query,
            [self.contents[d] for d in kept],
            (self.matrix[kept] @ q).tolist(),
            [self.c.doc_ids[d] for d in kept],
        )
        return kept, judged


def ndcg_at_k(ranked: list[str], judged: dict[str, int], k: int) -> float:
    """nDCG@k with linear gain and log2 discount (pytrec_eval / BEIR)."""
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: list[str], judged: dict[str, int], k: int) -> float:
    """Share of the relevant documents (grade > 0) in the top k."""
    relevant = {d for d, g in judged.items() if g > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked: list[str], judged: dict[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant document within the top k, else 0."""
    return next((1.0 / (i + 1) for i, d in enumerate(ranked[:k]) if judged.get(d, 0) > 0), 0.0)


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (as crag-judge's `percentile`)."""
    ordered = sorted(values)
    rank = math.ceil(p * len(ordered) - 1e-9)
    return ordered[min(max(rank, 1), len(ordered)) - 1]


def auroc(scores: list[float], labels: list[bool]) -> float | None:
    """Area under the ROC curve (Mann-Whitney U, ties counted 1/2); None if a class is empty."""
    pos = [s for s, label in zip(scores, labels) if label]
    neg = [s for s, label in zip(scores, labels) if not label]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def measure(stack: SeedStack) -> tuple[list[dict], dict]:
    """Runs every judged query through every stage; returns stage reports and the verdicts."""
    c = stack.c
    stack.run("hybrid", "warm-up query")  # first ONNX run allocates; not timed
    stages, hybrid_runs, judgements = [], [], []
    for stage in STAGES:
        latencies, sums = [], [0.0, 0.0, 0.0, 0.0]
        for qid, text in c.queries:
            started = time.perf_counter()
            ranking, judged = stack.run(stage, text)
            latencies.append((time.perf_counter() - started) * 1000.0)
            ranked = [c.doc_ids[d] for d in ranking]
            j = c.qrels[qid]
            sums[0] += ndcg_at_k(ranked, j, 10)
            sums[1] += recall_at_k(ranked, j, 10)
            sums[2] += recall_at_k(ranked, j, 100)
            sums[3] += mrr_at_k(ranked, j, 10)
            if stage == "hybrid":
                hybrid_runs.append(ranked)
            if judged is not None:
                judgements.append(judged)
        n = len(c.queries)
        stages.append(
            {
                "stage": stage,
                "ndcgAt10": sums[0] / n,
                "recallAt10": sums[1] / n,
                "recallAt100": sums[2] / n,
                "mrrAt10": sums[3] / n,
                "latencyMs": {p: percentile(latencies, x) for p, x in
                              (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))},
                # One client (the stack is single-threaded Python): queries over their time.
                "clients": 1,
                "queriesPerSecond": n / (sum(latencies) / 1000.0) if sum(latencies) else None,
            }
        )
        print(f"stage {stage} done", file=sys.stderr)
    answerable = [
        any(c.qrels[qid].get(d, 0) > 0 for d in ranked[:10])
        for (qid, _), ranked in zip(c.queries, hybrid_runs)
    ]
    verdicts: dict[str, list[int]] = {}
    for judged, ok in zip(judgements, answerable):
        verdicts.setdefault(judged["verdict"], [0, 0])[0 if ok else 1] += 1
    evaluator = {
        "evaluator": "seed-000-heuristic",
        "answerable": sum(answerable),
        "unanswerable": len(answerable) - sum(answerable),
        "auroc": auroc([j["score"] for j in judgements], answerable),
        "verdicts": dict(sorted(verdicts.items())),
    }
    return stages, evaluator


def versions() -> dict[str, str]:
    """Returns the versions of Python and the stack's packages."""
    names = ("rank_bm25", "numpy", "onnxruntime", "tokenizers")
    return {"python": platform.python_version(), **{n: version(n) for n in names}}


def print_report(report: dict) -> None:
    """Prints the report as a table, like `crag eval`."""
    b = report["build"]
    print(
        f"{report['dataset']} ({report['split']} split): {report['queries']} queries, "
        f"{report['documents']} documents; BM25 index {b['bm25Seconds']:.1f} s, embeddings "
        + (f"{b['embedSeconds']:.1f} s" if b["embedSeconds"] else f"cached ({b['embeddingsCache']})")
    )
    print(f"{'stage':<12} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7} "
          f"{'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for s in report["stages"]:
        lat = s["latencyMs"]
        print(f"{s['stage']:<12} {s['ndcgAt10']:>8.4f} {s['recallAt10']:>7.4f} "
              f"{s['recallAt100']:>7.4f} {s['mrrAt10']:>7.4f} {lat['p50']:>8.1f} "
              f"{lat['p95']:>8.1f} {lat['p99']:>8.1f}")
    print(f"peak memory {report['peakRssBytes'] / 2**20:.0f} MiB")
    e = report["evaluator"]
    auc = "n/a" if e["auroc"] is None else f"{e['auroc']:.3f}"
    print(f"evaluator {e['evaluator']}: AUROC {auc} over {e['answerable']} answerable / "
          f"{e['unanswerable']} unanswerable queries")
    for verdict, (a, u) in e["verdicts"].items():
        print(f"{verdict:<12} {a:>11} {u:>13}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parses the command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset", type=Path, nargs="?", help="BEIR collection directory")
    p.add_argument("--split", default="test", help="qrels split (qrels/<split>.tsv)")
    p.add_argument("--limit", type=int, help="evaluate only the first N judged queries")
    p.add_argument("--top-k", type=int, default=10, help="documents the evaluator judges")
    p.add_argument("--assets-dir", type=Path, default=Path.home() / ".cache/crag/assets")
    p.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache/crag/peer",
                   help="root of the corpus embedding cache")
    p.add_argument("--json", type=Path, help="write the report as JSON to this file")
    p.add_argument("--check-model", action="store_true",
                   help="print the published cosine check of the model and exit")
    args = p.parse_args(argv)
    if args.dataset is None and not args.check_model:
        p.error("a dataset directory is required")
    return args


def main(argv: list[str] | None = None) -> None:
    """Builds the stack over the collection, measures it and reports."""
    args = parse_args(argv)
    embedder = Embedder(args.assets_dir)
    if args.check_model:
        check_embedder(embedder)
        return
    c = read_collection(args.dataset, args.split, args.limit)
    print(f"{c.name}: {len(c.doc_ids)} documents, {len(c.queries)} judged queries",
          file=sys.stderr)
    matrix, embed_seconds, cache = corpus_embeddings(embedder, c, args.cache_dir)
    stack = SeedStack(c, embedder, matrix, args.top_k)
    stages, evaluator = measure(stack)
    report = {
        "stack": "seeds' Python stack (rank_bm25 + numpy brute force + RRF + seed heuristic)",
        "dataset": str(args.dataset),
        "split": args.split,
        "queries": len(c.queries),
        "documents": len(c.doc_ids),
        "bm25Tokenizer": r"lowercase, regex \w+ (no stemming, no stop words)",
        "build": {
            "bm25Seconds": stack.bm25_seconds,
            "embedSeconds": embed_seconds,
            "embeddingsCache": str(cache),
        },
        "stages": stages,
        "evaluator": evaluator,
        "peakRssBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "versions": versions(),
    }
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"report written to {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
