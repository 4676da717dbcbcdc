#!/usr/bin/env python3
"""The project's own docs as a small judged BEIR collection.

Writes `corpus.jsonl` beside this file: one document per level-2 section (`## `) of README.md
and docs/*.md (a file's text before its first `## ` is its `intro`; `### ` subsections stay in
their section), id `<file stem>/<heading slug>`, title `<file title>: <heading>`. The judged
questions (`queries.jsonl`) and their sections (`qrels/test.tsv`, grade 2 = answers it, 1 =
part of the answer) were written from the docs before crag was run on them. Every judged id
must exist: the script fails naming the ids a rename of a heading left behind.

    python3 bench/collections/crag-docs/make.py
    crag eval --dataset bench/collections/crag-docs
"""

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def slug(heading: str) -> str:
    """The heading up to its first `(` or `:`, lowercase, runs of other characters as `-`."""
    short = re.split(r"[(:]", heading, maxsplit=1)[0]
    return re.sub(r"[^a-z0-9]+", "-", short.lower()).strip("-")


def sections(path: Path):
    stem = "readme" if path.name == "README.md" else path.stem
    lines = path.read_text(encoding="utf-8").splitlines()
    title = next((l[2:].strip() for l in lines if l.startswith("# ")), stem)
    current, body, in_fence = "intro", [], False
    for line in lines:
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("## "):
            yield stem, title, current, body
            current, body = line[3:].strip(), []
        elif not (not in_fence and line.startswith("# ")):
            body.append(line)
    yield stem, title, current, body


def main() -> int:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    docs, seen = [], set()
    for path in files:
        for stem, title, heading, body in sections(path):
            text = "\n".join(body).strip()
            if not text:
                continue
            doc_id = f"{stem}/{slug(heading)}"
            n = 2
            while doc_id in seen:
                doc_id = f"{stem}/{slug(heading)}-{n}"
                n += 1
            seen.add(doc_id)
            docs.append({"_id": doc_id, "title": f"{title}: {heading}", "text": text})
    judged = set()
    with open(HERE / "qrels" / "test.tsv", encoding="utf-8") as f:
        next(f)
        for row in f:
            if row.strip():
                judged.add(row.split("\t")[1])
    missing = sorted(judged - seen)
    if missing:
        print("judged sections missing from the docs: " + ", ".join(missing), file=sys.stderr)
        return 1
    with open(HERE / "corpus.jsonl", "w", encoding="utf-8") as out:
        for d in docs:
            out.write(json.dumps(d, ensure_ascii=False) + "\n")
    print(f"{len(docs)} sections of {len(files)} files -> {HERE / 'corpus.jsonl'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
