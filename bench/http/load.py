#!/usr/bin/env python3
"""Closed-loop load on a running `crag serve`: N clients, each one keep-alive HTTP/1.1
connection posting `POST /v1/query` back to back, for 1, 2, 4 and 8 clients by default.

    python3 bench/http/load.py http://127.0.0.1:8080 queries.jsonl --clients 1,2,4,8 \
        --seconds 20 [--crag] [--token T] [--json out.json]

Queries are a BEIR queries.jsonl (`text`) or one per line, taken round-robin (each client
starts at its own offset). Per client count it prints queries/s, p50/p95/p99 latency in ms
(request sent to response read, as the client sees it), the errors, and the CPU seconds this
client process used (it runs on the same machine as the server and takes cores from it).
Standard library only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse


def read_queries(path: Path) -> list[str]:
    """Returns the query texts of a BEIR queries.jsonl or a file of one query per line."""
    texts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        texts.append(json.loads(line)["text"] if line.startswith("{") else line)
    if not texts:
        sys.exit(f"load: {path} has no queries")
    return texts


def percentile(sorted_ms: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_ms:
        return float("nan")
    rank = max(1, round(p / 100 * len(sorted_ms)))
    return sorted_ms[min(rank, len(sorted_ms)) - 1]


def client(
    url, queries, offset, body_extra, headers, stop_at, latencies, errors, lock
) -> None:
    """Posts queries on one connection until `stop_at`; appends latencies (ms) and errors."""
    conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=60)
    mine, failed, i = [], [], offset
    while time.perf_counter() < stop_at:
        body = json.dumps({"query": queries[i % len(queries)], **body_extra})
        i += 1
        start = time.perf_counter()
        try:
            conn.request("POST", "/v1/query", body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            if response.status != 200:
                failed.append(f"{response.status}: {payload[:200]!r}")
                continue
        except (OSError, http.client.HTTPException) as e:
            failed.append(repr(e))
            conn.close()
            conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=60)
            continue
        mine.append((time.perf_counter() - start) * 1000)
    conn.close()
    with lock:
        latencies.extend(mine)
        errors.extend(failed)


def run(urls, queries, clients: int, seconds: float, body_extra, headers) -> dict:
    """One closed-loop run with `clients` connections, spread over `urls` in turn (replicas
    of one index); returns its figures."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    stop_at = started + seconds
    stride = max(1, len(queries) // clients)
    threads = [
        threading.Thread(
            target=client,
            args=(
                urls[c % len(urls)],
                queries,
                c * stride,
                body_extra,
                headers,
                stop_at,
                latencies,
                errors,
                lock,
            ),
        )
        for c in range(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    latencies.sort()
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": len(errors),
        "firstErrors": errors[:3],
        "seconds": elapsed,
        "queriesPerSecond": len(latencies) / elapsed,
        "latencyMs": {p: percentile(latencies, float(p[1:])) for p in ("p50", "p95", "p99")},
        "clientCpuSeconds": cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "base_url",
        help="the server, e.g. http://127.0.0.1:8080; several replicas comma-separated "
        "(clients go to each in turn)",
    )
    parser.add_argument("queries", type=Path)
    parser.add_argument("--clients", default="1,2,4,8", help="comma-separated client counts")
    parser.add_argument("--seconds", type=float, default=20.0, help="duration of each run")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of one client first")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--crag", action="store_true", help="useCrag: true (default false)")
    parser.add_argument("--token", help="bearer token, when [auth] is on")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()

    urls = [urlparse(u.strip()) for u in args.base_url.split(",") if u.strip()]
    for url in urls:
        if url.scheme != "http" or not url.hostname:
            sys.exit(f"load: {url.geturl()} is not an http:// URL")
    if not urls:
        sys.exit("load: no server URL")
    queries = read_queries(args.queries)
    headers = {"Content-Type": "application/json"}
    if args.token:
        headers["Authorization"] = f"Bearer {args.token}"
    body_extra = {"topK": args.top_k, "useCrag": args.crag}
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    if not counts or min(counts) < 1:
        sys.exit("load: --clients must list positive counts")

    warm = run(urls, queries, len(urls), args.warmup, body_extra, headers)
    if warm["requests"] == 0:
        sys.exit(f"load: no query succeeded while warming up: {warm['firstErrors']}")
    runs = [run(urls, queries, n, args.seconds, body_extra, headers) for n in counts]
    print("| clients | q/s | p50 ms | p95 ms | p99 ms | requests | errors | client CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        lat = r["latencyMs"]
        print(
            f"| {r['clients']} | {r['queriesPerSecond']:.1f} | {lat['p50']:.1f} | {lat['p95']:.1f} "
            f"| {lat['p99']:.1f} | {r['requests']} | {r['errors']} | {r['clientCpuSeconds']:.1f} |"
        )
        for e in r["firstErrors"]:
            print(f"  error: {e}", file=sys.stderr)
    if args.json:
        report = {"baseUrl": args.base_url, "crag": args.crag, "topK": args.top_k, "runs": runs}
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    if any(r["errors"] for r in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
