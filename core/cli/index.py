"""`threadloom index`: finish the search index if a first load left it behind (and the costs, stats
and signals of sessions a stopped writer left)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from .common import Command, add_db_option, catch_up_index, open_writing, say_waiting


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "index",
        help="finish the search index if a first load left it behind",
        description="Index for search every record not indexed yet, then read the turns "
        "of the sessions it holds for search by meaning. A first load makes sessions "
        "browsable first and does both afterwards; this catches up (it is resumable: "
        "an interrupted run continues where it stopped). What a stopped ingest or sync left of its "
        "sessions' costs, stats and signals is finished too.",
    )
    add_db_option(p)
    p.add_argument(
        "--json", action="store_true", help="print one JSON object: indexed, seconds, episodes_seconds"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def cmd_index(args: argparse.Namespace) -> int:

    from ..ingest.ledger import finish_derived
    from ..store import db
    from ..store.writer_lock import writer_lock

    started = time.perf_counter()
    timings: dict[str, float] = {}
    with writer_lock(args.db or db.default_db_path(), on_wait=say_waiting):
        conn = open_writing(args)
        behind = catch_up_index(conn, quiet=args.json or args.quiet, timings=timings)
        finished = finish_derived(conn)  # what a writer killed after committing its records left
    seconds = round(time.perf_counter() - started, 3)
    if args.json:
        episodes_seconds = round(timings.get("episodes", 0.0), 3)
        print(json.dumps({"indexed": behind, "seconds": seconds, "episodes_seconds": episodes_seconds}))
        return 0
    if finished:
        from ..base.text import count_of

        print(
            f"finished what a stopped run left of {count_of(len(finished), 'session')}: costs, stats, signals"
        )
    if behind:
        read = ", the sessions' turns read for search by meaning," if "episodes" in timings else ""
        print(f"search index complete: {behind:,} records indexed{read} in {seconds:.2f} s")
    elif timings:  # the index was whole: a catch-up stopped before the turns
        print(f"the sessions' turns read for search by meaning in {seconds:.2f} s")
    else:
        print("the search index is already complete")
    return 0


COMMANDS = (Command("index", cmd_index),)
