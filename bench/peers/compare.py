#!/usr/bin/env python3
"""Prints a markdown table comparing a `crag eval --json` report with a seed_stack.py report.

    python3 bench/peers/compare.py crag.json peer.json

Per stage: nDCG@10 of both, their difference, p50 latency of both and the ratios crag/peer of
p50 and p95 (above 1: crag is slower); above it, documents ingested per second by both when
both reports embedded their corpus. Needs only the standard library.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def load(path: Path) -> dict:
    """Reads a report and indexes its stages by name."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"compare: cannot read {path}: {e}")
    if "stages" not in report:
        sys.exit(f"compare: {path} has no `stages`; is it a `crag eval --json` or peer report?")
    report["byStage"] = {s["stage"]: s for s in report["stages"]}
    return report


def ratio(a: float | None, b: float | None) -> str:
    """Formats a / b, or '-' when either is missing or b is 0."""
    return f"{a / b:.2f}" if a is not None and b else "-"


def recall(stage: dict | None) -> str:
    """Formats a stage's Recall@100, or '-' when it was not run."""
    value = (stage or {}).get("recallAt100")
    return f"{value:.4f}" if value is not None else "-"


def throughput(stage: dict | None) -> str:
    """Formats a stage's queries/s and its number of clients, or '-' when it was not run."""
    qps = (stage or {}).get("queriesPerSecond")
    return f"{qps:.1f} ({stage.get('clients', '?')})" if qps else "-"


def table(crag: dict, peer: dict) -> str:
    """Returns the markdown comparison table of the stages of both reports."""
    names = [s["stage"] for s in crag["stages"]]
    names += [s["stage"] for s in peer["stages"] if s["stage"] not in crag["byStage"]]
    lines = [
        "| stage | nDCG@10 crag | nDCG@10 peer | difference | R@100 crag | R@100 peer "
        "| p50 ms crag | p50 ms peer "
        "| p50 crag/peer | p95 crag/peer | q/s crag (clients) | q/s peer (clients) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        c, p = crag["byStage"].get(name), peer["byStage"].get(name)
        nc, np_ = (c or {}).get("ndcgAt10"), (p or {}).get("ndcgAt10")
        lc, lp = (c or {}).get("latencyMs", {}), (p or {}).get("latencyMs", {})
        cells = [
            name,
            f"{nc:.4f}" if nc is not None else "-",
            f"{np_:.4f}" if np_ is not None else "-",
            f"{nc - np_:+.4f}" if nc is not None and np_ is not None else "-",
            recall(c),
            recall(p),
            f"{lc['p50']:.1f}" if "p50" in lc else "-",
            f"{lp['p50']:.1f}" if "p50" in lp else "-",
            ratio(lc.get("p50"), lp.get("p50")),
            ratio(lc.get("p95"), lp.get("p95")),
            throughput(c),
            throughput(p),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ingest(crag: dict, peer: dict) -> str:
    """Returns the ingest comparison: documents/s of both (crag: chunk, embed, both indexes;
    peer: embed + BM25 build), or why there is none."""
    c = crag.get("ingest") or {}
    docs, secs = c.get("documentsWritten"), c.get("elapsedSeconds")
    b = peer.get("build") or {}
    embed = b.get("embedSeconds") or 0.0
    if not docs or not secs:
        return "ingest: crag reused its index (nothing written), no comparison"
    crag_rate = docs / secs
    line = (f"ingest: crag {docs} documents ({c.get('chunksWritten')} chunks) in {secs:.1f} s, "
            f"{crag_rate:.1f} docs/s")
    if not embed:
        return line + "; peer embeddings cached (run with PEER_FRESH_EMBEDDINGS=1), no comparison"
    peer_secs = embed + (b.get("bm25Seconds") or 0.0)
    peer_rate = peer["documents"] / peer_secs
    return (line + f"; peer {peer['documents']} documents in {peer_secs:.1f} s, "
            f"{peer_rate:.1f} docs/s; crag/peer {crag_rate / peer_rate:.2f}")


def main(argv: list[str] | None = None) -> None:
    """Parses the arguments and prints the header and the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("crag", type=Path, help="report of `crag eval --json`")
    p.add_argument("peer", type=Path, help="report of `seed_stack.py --json`")
    args = p.parse_args(argv)
    crag, peer = load(args.crag), load(args.peer)
    print(f"crag: {crag.get('dataset')}, {crag.get('queries')} queries, "
          f"{crag.get('documents')} documents, {crag.get('chunks')} chunks")
    print(f"peer: {peer.get('dataset')}, {peer.get('queries')} queries, "
          f"{peer.get('documents')} documents")
    if crag.get("queries") != peer.get("queries"):
        print("warning: the two reports cover different numbers of queries", file=sys.stderr)
    print(ingest(crag, peer))
    print()
    print(table(crag, peer))


if __name__ == "__main__":
    main()
