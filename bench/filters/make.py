#!/usr/bin/env python3
"""Writes a BEIR corpus whose documents carry a synthetic metadata field: `bucket`, 0-99,
from a hash of the document id (the same bucket on every run), beside the collection's
queries. The benchmark of docs/benchmarks.md ("Metadata filters") ingests it and queries
with and without a filter keeping one bucket.

    python3 bench/filters/make.py ../shared/data/scifact /tmp/scifact-buckets

The collection is not copied into the repository (SciFact is CC BY-NC)."""

import hashlib
import json
import shutil
import sys
from pathlib import Path

BUCKETS = 100


def bucket(doc_id: str) -> int:
    return int(hashlib.sha1(doc_id.encode()).hexdigest(), 16) % BUCKETS


def main() -> None:
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    target.mkdir(parents=True, exist_ok=True)
    counts = [0] * BUCKETS
    with open(source / "corpus.jsonl") as src, open(target / "corpus.jsonl", "w") as out:
        for line in src:
            if not line.strip():
                continue
            record = json.loads(line)
            b = bucket(str(record["_id"]))
            counts[b] += 1
            record["metadata"] = {"bucket": b}
            out.write(json.dumps(record) + "\n")
    shutil.copy(source / "queries.jsonl", target / "queries.jsonl")
    qrels = target / "qrels"
    if qrels.exists():
        shutil.rmtree(qrels)
    shutil.copytree(source / "qrels", qrels)
    print(f"{sum(counts)} documents; buckets of {min(counts)} to {max(counts)}")


if __name__ == "__main__":
    main()
