"""Writes the queries of a BEIR collection that its test qrels judge, as JSON lines with `_id`
and `text` (what `crag query --batch` reads).

    python3 bench/storage/judged_queries.py QUERIES_JSONL QRELS_TSV OUT_JSONL
"""

import csv
import json
import sys


def main() -> None:
    queries, qrels, out = sys.argv[1:4]
    with open(qrels, encoding="utf-8") as f:
        judged = {row[0] for row in csv.reader(f, delimiter="\t") if row and row[0] != "query-id"}
    with open(out, "w", encoding="utf-8") as sink, open(queries, encoding="utf-8") as source:
        for line in source:
            q = json.loads(line)
            if q["_id"] in judged:
                sink.write(json.dumps({"_id": q["_id"], "text": q["text"]}) + "\n")


if __name__ == "__main__":
    main()
