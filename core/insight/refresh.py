"""Derived data brought up to date after a batch of records: costs, the stats' sums, episodes and
their vectors, signals (core.store.derived lists the kinds and their tables)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

SessionsDone = Callable[[int, int], None]


def finish(
    conn: sqlite3.Connection,
    changed: set[str],
    *,
    on_signals: SessionsDone | None = None,
    on_embed: SessionsDone | None = None,
    timings: dict[str, float] | None = None,
) -> float:
    """After a batch's records are in (and `Ledger.finalize` has run): costs, the stats' sums, the
    episodes and their vectors, and the signals, in that order, of what this batch changed and of
    anything a killed run left marked. Returns the seconds the signals took."""
    from ..base.text import SIGNALS_VERSION, SIGNALS_VERSION_KEY
    from ..insight import episodes
    from ..store.sql import get_meta
    from .cost import price_pending
    from .stats import refresh_pending

    repriced = price_pending(conn)  # the new messages' costs (or all, with new price data)
    refresh_pending(conn)  # the stats' sums of every session marked stale
    outdated = get_meta(conn, SIGNALS_VERSION_KEY) != SIGNALS_VERSION  # found by an older pass: all again
    due = {r[0] for r in conn.execute("SELECT session_id FROM derived_pending WHERE kind = 'signals'")}
    # the signals' marks say which sessions a killed run left: their episodes are built again too
    started = time.perf_counter()
    episodes.refresh(conn, due | changed, on_embed)  # (sessions done of all)
    episodes.embed_pending(conn, on_embed)  # what a killed run or a new model left (episodes done of all)
    if timings is not None:
        timings["episodes"] = time.perf_counter() - started
    if not (due or changed or repriced or outdated):
        return 0.0
    from ..insight import signals  # a run with nothing new never loads it

    if outdated:
        seconds = signals.rebuild(conn, on_signals)
    else:
        seconds = signals.update(conn, due | changed | repriced, on_signals)
    conn.executemany(
        "DELETE FROM derived_pending WHERE kind = 'signals' AND session_id = ?", [(s,) for s in due]
    )
    return seconds
