#!/usr/bin/env python3
"""Why crag's BM25 leg was below a stock Lucene BM25: each factor measured on its own.

    python3 bench/bm25/factors.py ../shared/data/scifact --split train --queries queries_all.jsonl
    python3 bench/bm25/factors.py ../shared/data/cranfield

Needs the peer venv (bench/peers/setup.sh: PyStemmer, tokenizers, numpy) and crag's assets
(the MiniLM tokenizer cuts chunks as crag does: 224 model tokens, 32 shared). Prints nDCG@10
and Recall@100 of:

- the afternoon script's BM25 (bm25s's tokeniser: ``\\w\\w+``, no single characters) and the
  same over crag's analysis (alphanumeric runs, 40-byte limit, ASCII folding, Lucene's stop
  words, Snowball), each with repeated query words counted or not;
- crag before 2026-11-26: chunks scored on their own (title a second BM25 field at 0.75), a
  document scored as its best chunk; and chunks with the title in the same field;
- whole documents with the title a second field (scores added), and BM25F over the title and
  the title + text (the title's frequency weighted before one saturation: crag's
  ``scope = "documents"``), for several title weights.

Everything is Lucene's BM25 (k1 1.2, b 0.75, idf ln(1 + (N - n + .5) / (n + .5))).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import re
import sys
import unicodedata
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
from seed_stack import ndcg_at_k, recall_at_k  # noqa: E402
from script_stack import load  # noqa: E402

LUCENE_STOP = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)
CRAG_TOKEN = re.compile(r"[^\W_]+")
BM25S_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def analyser(kind: str):
    """crag's analysis (``crag``) or bm25s's (``bm25s``), both Snowball-stemmed."""
    import Stemmer

    stem = Stemmer.Stemmer("english").stemWords

    def crag(text: str) -> list[str]:
        words = (w for w in CRAG_TOKEN.findall(text.lower()) if len(w.encode()) <= 40)
        words = (unicodedata.normalize("NFKD", w).encode("ascii", "ignore").decode() for w in words)
        return stem([w for w in words if w and w not in LUCENE_STOP])

    def bm25s(text: str) -> list[str]:
        return stem([w for w in BM25S_TOKEN.findall(text.lower()) if w not in LUCENE_STOP])

    return crag if kind == "crag" else bm25s


class Fielded:
    """BM25F over fields of token lists (one field: plain BM25); document frequency over the
    union of the fields, each field's own mean length."""

    def __init__(self, fields: list[list[list[str]]], weights: list[float], k1=1.2, b=0.75):
        self.k1, self.weights, self.n = k1, weights, len(fields[0])
        self.postings = collections.defaultdict(list)
        df = collections.Counter()
        self.norms = []
        for f, docs in enumerate(fields):
            lengths = np.array([len(d) for d in docs], float)
            self.norms.append(1 - b + b * lengths / max(lengths.mean(), 1e-9))
            for i, d in enumerate(docs):
                for term, tf in collections.Counter(d).items():
                    self.postings[term].append((f, i, tf))
        for term, hits in self.postings.items():
            df[term] = len({i for _, i, _ in hits})
        self.df = df

    def scores(self, query: list[str], dedupe: bool) -> np.ndarray:
        out = np.zeros(self.n)
        for term in (dict.fromkeys(query) if dedupe else query):
            hits = self.postings.get(term)
            if not hits:
                continue
            n = self.df[term]
            idf = math.log(1 + (self.n - n + 0.5) / (n + 0.5))
            tf = collections.defaultdict(float)
            for f, i, v in hits:
                tf[i] += self.weights[f] * v / self.norms[f][i]
            for i, x in tf.items():
                out[i] += idf * x * (self.k1 + 1) / (x + self.k1)
        return out


def chunks_of(texts: list[str], tokenizer, size=224, overlap=32) -> list[tuple[int, str]]:
    """crag's chunks: windows of `size` model tokens sharing `overlap`."""
    out = []
    for i, text in enumerate(texts):
        offsets = tokenizer.encode(text, add_special_tokens=False).offsets
        if not offsets:
            out.append((i, text))
            continue
        start = 0
        while True:
            end = min(start + size, len(offsets))
            out.append((i, text[offsets[start][0]:offsets[end - 1][1]]))
            if end == len(offsets):
                break
            start = end - overlap
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset", type=Path)
    p.add_argument("--split", default="test")
    p.add_argument("--queries", help="queries file name in the dataset (default queries.jsonl)")
    p.add_argument("--assets-dir", type=Path, default=Path.home() / ".cache/crag/assets")
    args = p.parse_args()
    from tokenizers import Tokenizer

    c = load(args.dataset, args.split, args.dataset / args.queries if args.queries else None, None)
    spec = json.loads((args.assets_dir / "manifest.json").read_text())["embedder"]
    tokenizer = Tokenizer.from_file(spec["tokenizer"])
    tokenizer.no_padding()
    tokenizer.no_truncation()
    chunks = chunks_of(c.texts, tokenizer)
    print(f"{c.name} ({args.split}): {len(c.doc_ids)} documents, {len(chunks)} chunks, "
          f"{len(c.queries)} queries")

    def report(name: str, rank) -> None:
        nd = r = 0.0
        for qid, text in c.queries:
            ranked = rank(text)
            nd += ndcg_at_k(ranked, c.qrels[qid], 10)
            r += recall_at_k(ranked, c.qrels[qid], 100)
        print(f"{nd / len(c.queries):.4f}  R@100 {r / len(c.queries):.4f}  {name}")

    def documents(scores: np.ndarray) -> list[str]:
        best = np.argsort(-scores)[:100]
        return [c.doc_ids[i] for i in best if scores[i] > 0]

    for kind in ("bm25s", "crag"):
        a = analyser(kind)
        index = Fielded([[a(f"{t}\n{x}") for t, x in zip(c.titles, c.texts)]], [1.0])
        for dedupe in (False, True):
            report(f"whole documents, title + text one field, {kind} analysis, "
                   f"repeated query words {'once' if dedupe else 'counted'}",
                   lambda q: documents(index.scores(a(q), dedupe)))
    a = analyser("crag")
    titles = [a(t) for t in c.titles]
    texts = [a(x) for x in c.texts]
    chunk_texts = [a(x) for _, x in chunks]
    chunk_titles = [titles[d] for d, _ in chunks]
    owner = [c.doc_ids[d] for d, _ in chunks]

    def best_chunk(scores: np.ndarray) -> list[str]:
        seen: dict[str, None] = {}
        for i in np.argsort(-scores)[:400]:
            if scores[i] <= 0:
                break
            seen.setdefault(owner[i])
        return list(seen)[:100]

    body, title = Fielded([chunk_texts], [1.0]), Fielded([chunk_titles], [1.0])
    report("chunks, title a second field at 0.75, document = best chunk (crag before)",
           lambda q: best_chunk(body.scores(a(q), True) + 0.75 * title.scores(a(q), True)))
    joined = Fielded([[t + x for t, x in zip(chunk_titles, chunk_texts)]], [1.0])
    report("chunks, title + text one field, document = best chunk",
           lambda q: best_chunk(joined.scores(a(q), True)))
    dbody, dtitle = Fielded([texts], [1.0]), Fielded([titles], [1.0])
    report("whole documents, title a second field at 0.75 (scores added)",
           lambda q: documents(dbody.scores(a(q), True) + 0.75 * dtitle.scores(a(q), True)))
    both = [t + x for t, x in zip(titles, texts)]
    for w in (0.5, 1.0, 1.5, 2.0, 3.0):
        f = Fielded([titles, both], [w, 1.0])
        report(f"whole documents, BM25F title weight {w} over title and title + text",
               lambda q: documents(f.scores(a(q), True)))


if __name__ == "__main__":
    main()
