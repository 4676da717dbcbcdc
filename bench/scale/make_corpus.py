#!/usr/bin/env python3
"""A large synthetic corpus for crag's scale benchmarks, made on this machine, reproducibly.

Text: a word-bigram model of the BEIR collections beside the project (SciFact and Cranfield
corpora: titles and texts), sampled with a fixed seed. Each document is one title and about
`--words` words of text (one chunk at crag's default 224 tokens), so N documents are about N
chunks. The vocabulary, the words' frequencies and the documents' lengths are those of real
scientific and engineering abstracts; the sentences are not (nobody can judge relevance on
them: the scale benchmarks measure cost, not quality). Written once and reused: the same
arguments write the same bytes.

    python3 bench/scale/make_corpus.py --docs 1000000 --out /work/scale/corpus-1m.jsonl \
        ../shared/data/scifact/corpus.jsonl ../shared/data/cranfield/corpus.jsonl

Each line: {"_id": "s0000001", "title": ..., "text": ..., "metadata": {"base": <id of the real
document whose first words seeded it>, "bucket": <0-99>}}.
"""

import argparse
import bisect
import collections
import json
import random
import re
import sys

WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*|[0-9]+(?:\.[0-9]+)?|[.,;:()%]")
ENDS = {"."}


def read(paths):
    """The real documents: (id, words of title + text)."""
    docs = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                words = WORD.findall(f"{d.get('title', '')} . {d.get('text', '')}")
                if len(words) > 8:
                    docs.append((d["_id"], words))
    return docs


def model(docs):
    """Each word's followers as a cumulative-count table, for sampling by frequency."""
    counts = collections.defaultdict(collections.Counter)
    for _, words in docs:
        for a, b in zip(words, words[1:]):
            counts[a][b] += 1
    table = {}
    for word, followers in counts.items():
        ordered = sorted(followers.items())
        cumulative, total = [], 0
        for _, n in ordered:
            total += n
            cumulative.append(total)
        table[word] = ([w for w, _ in ordered], cumulative, total)
    return table


def walk(table, starts, rng, start, n):
    """`n` words from `start` along the bigram chain (restarting at a dead end, at a word of
    `starts`)."""
    out, word = [], start
    while len(out) < n:
        out.append(word)
        entry = table.get(word)
        if entry is None:
            word = rng.choice(starts)
            continue
        words, cumulative, total = entry
        word = words[bisect.bisect_right(cumulative, rng.randrange(total))]
    return out


def join(words):
    text = " ".join(words)
    return re.sub(r" ([.,;:%)])", r"\1", text).replace("( ", "(")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="+", help="BEIR corpus.jsonl files (the vocabulary)")
    parser.add_argument("--docs", type=int, required=True, help="documents to write")
    parser.add_argument("--words", type=int, default=150, help="words of text per document")
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    docs = read(args.corpora)
    table = model(docs)
    starts = sorted(table)
    rng = random.Random(args.seed)
    with open(args.out, "w", encoding="utf-8") as out:
        for i in range(args.docs):
            base, words = docs[rng.randrange(len(docs))]
            # The first words of a real document, then the chain: each synthetic document
            # leans towards one real one's topic.
            head = words[: rng.randint(3, 8)]
            title = walk(table, starts, rng, head[-1], rng.randint(4, 10))
            body = head + walk(table, starts, rng, head[-1], args.words - len(head))[1:]
            record = {
                "_id": f"s{i:07d}",
                "title": join(title).rstrip(".,;: "),
                "text": join(body),
                "metadata": {"base": base, "bucket": i % 100},
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            if (i + 1) % 100000 == 0:
                print(f"make_corpus: {i + 1} documents", file=sys.stderr)


if __name__ == "__main__":
    main()
