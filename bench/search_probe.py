"""Search latency inside one process: every query of bench/queries.txt against a threadloom database.

    python bench/search_probe.py DB [--queries bench/queries.txt] [--repeat 5]

Prints one JSON object: per query its category, first-call and median time (ms) and hit count.
Run by bench/run.py with the interpreter (and PYTHONPATH) of the threadloom being measured; it
uses `core.read.search.search(conn, text, limit=...)`, so it fails loudly if that API changes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def load_queries(path: Path) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        category, _, query = line.partition("\t")
        out.append((category.strip(), query.strip()))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db", type=Path)
    ap.add_argument("--queries", type=Path, default=Path(__file__).resolve().parent / "queries.txt")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument(
        "--mode",
        default="words",
        help="words (core.read.search) or hybrid / meaning (core.insight.recall, where it exists)",
    )
    args = ap.parse_args(argv)

    started = time.perf_counter()
    from threadloom.core.store import db

    if args.mode == "words":
        from threadloom.core.read.search import search
    else:
        from threadloom.core.insight.recall import search_recall

        def search(conn, query, *, limit):  # type: ignore[no-redef]
            return search_recall(conn, query, mode=args.mode, limit=limit)

    conn = db.connect(args.db)
    ready = time.perf_counter() - started
    results = []
    for category, query in load_queries(args.queries):
        times = []
        hits = 0
        for _ in range(1 + args.repeat):
            t0 = time.perf_counter()
            res = search(conn, query, limit=args.limit)
            times.append((time.perf_counter() - t0) * 1000)
            hits = len(res.hits)
        results.append(
            {
                "category": category,
                "query": query,
                "first_ms": round(times[0], 3),
                "median_ms": round(statistics.median(times[1:]), 3),
                "hits": hits,
            }
        )
    import resource

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    json.dump(
        {
            "open_seconds": round(ready, 4),
            "repeat": args.repeat,
            "queries": results,
            "peak_mb": round(peak_mb, 1),
        },
        sys.stdout,
    )
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
