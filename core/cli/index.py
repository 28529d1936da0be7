"""`threadloom index`: finish the search index if a first load left it behind."""

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
        "an interrupted run continues where it stopped).",
    )
    add_db_option(p)
    p.add_argument(
        "--json", action="store_true", help="print one JSON object: indexed, seconds, episodes_seconds"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def cmd_index(args: argparse.Namespace) -> int:

    from ..store import db
    from ..store.writer_lock import writer_lock

    started = time.perf_counter()
    timings: dict[str, float] = {}
    with writer_lock(args.db or db.default_db_path(), on_wait=say_waiting):
        behind = catch_up_index(open_writing(args), quiet=args.json or args.quiet, timings=timings)
    seconds = round(time.perf_counter() - started, 3)
    if args.json:
        episodes_seconds = round(timings.get("episodes", 0.0), 3)
        print(json.dumps({"indexed": behind, "seconds": seconds, "episodes_seconds": episodes_seconds}))
    elif behind:
        read = ", the sessions' turns read for search by meaning," if "episodes" in timings else ""
        print(f"search index complete: {behind:,} records indexed{read} in {seconds:.2f} s")
    elif timings:  # the index was whole: a catch-up stopped before the turns
        print(f"the sessions' turns read for search by meaning in {seconds:.2f} s")
    else:
        print("the search index is already complete")
    return 0


COMMANDS = (Command("index", cmd_index),)
