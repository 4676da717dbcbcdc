#!/usr/bin/env python3
"""The scale runs' queries and judgements: SciFact's judged test queries, and as their
"relevant" documents the synthetic documents seeded from a relevant SciFact document
(`metadata.base`). The scale corpus measures cost, not quality: these judgements only let
`crag eval` run on it (and ids of Cranfield bases equal to a SciFact id count too).

    python3 bench/scale/judged.py CORPUS_JSONL SCIFACT_DIR OUT_DIR
writes OUT_DIR/queries.jsonl and OUT_DIR/qrels/test.tsv.
"""

import collections
import json
import os
import sys


def main():
    corpus, scifact, out = sys.argv[1:4]
    relevant = collections.defaultdict(set)  # SciFact document -> its queries
    with open(os.path.join(scifact, "qrels", "test.tsv"), encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2].isdigit() and int(parts[2]) > 0:
                relevant[parts[1]].add(parts[0])
    judged = collections.defaultdict(list)
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            for query in relevant.get(doc.get("metadata", {}).get("base"), ()):
                judged[query].append(doc["_id"])
    os.makedirs(os.path.join(out, "qrels"), exist_ok=True)
    with open(os.path.join(out, "qrels", "test.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for query in sorted(judged):
            for doc in judged[query]:
                f.write(f"{query}\t{doc}\t1\n")
    queries = {q for docs in relevant.values() for q in docs}
    kept = 0
    with open(os.path.join(scifact, "queries.jsonl"), encoding="utf-8") as f, open(
        os.path.join(out, "queries.jsonl"), "w", encoding="utf-8"
    ) as w:
        for line in f:
            if json.loads(line)["_id"] in queries:
                w.write(line)
                kept += 1
    print(f"judged.py: {kept} queries, {len(judged)} with synthetic relevant documents",
          file=sys.stderr)


if __name__ == "__main__":
    main()
