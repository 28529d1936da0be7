"""Derived data brought up to date after a batch of records: costs, the stats' sums, episodes and
their vectors, signals (core.store.derived lists the kinds and their tables); and what a first load
leaves for after the sessions are browsable: the search index, then the episodes (`catch_up`)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable

from ..store import search_index

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
    if search_index.pending(conn) is None:
        waiting = episodes.left_for_index(conn)  # a first load's, if its `catch_up` never ran
        episodes.refresh(conn, due | changed | waiting, on_embed)  # (sessions done of all)
        episodes.embed_pending(conn, on_embed)  # what a killed run or a new model left (episodes done of all)
    else:  # a first load: the sessions browsable first, their turns read for meaning with the index
        episodes.leave_for_index(conn, due | changed)
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


def left_behind(conn: sqlite3.Connection) -> bool:
    """Whether a first load left work for `catch_up`: its search index, or episodes to read."""
    from ..insight import episodes

    return search_index.pending(conn) is not None or bool(episodes.left_for_index(conn))


def catch_up(
    conn: sqlite3.Connection,
    on_index: Callable[[search_index.IndexProgress], None] | None = None,
    on_embed: SessionsDone | None = None,
    cancel: threading.Event | None = None,
    *,
    wait: bool = True,
    on_wait: Callable[[str], None] | None = None,
    timings: dict[str, float] | None = None,
) -> bool:
    """What a first load left once its sessions were browsable: the search index, then the episodes
    of its sessions (search by meaning, `file:`/`cmd:`/`error:` filters, fork context) with their
    vectors. Under the writer lock; without `wait`, another writer at work is left to it (False).
    Returns True when both are complete; each step resumes where an interrupted one stopped.
    `timings` gets the episodes' seconds ("episodes")."""
    from ..insight import episodes
    from ..store.sql import page_cache
    from ..store.writer_lock import WriterBusy, writer_lock

    try:
        with writer_lock(conn, wait=wait, on_wait=on_wait, cancel=cancel):
            sessions = episodes.left_for_index(conn)
            # a first load's many sessions: their turns read on another thread while the index is built
            behind = sessions and search_index.pending(conn) is not None
            ahead = episodes.read_ahead(conn, sessions) if behind else None
            try:
                if not search_index.build(conn, on_index, cancel):
                    return False
                if sessions and not (cancel is not None and cancel.is_set()):
                    started = time.perf_counter()
                    with page_cache(conn):
                        if ahead is not None:
                            episodes.refresh_read_ahead(conn, ahead, on_embed)
                        else:
                            episodes.refresh(conn, sessions, on_embed)
                        episodes.embed_pending(conn, on_embed, cancel)
                    if timings is not None:
                        timings["episodes"] = time.perf_counter() - started
            finally:
                if ahead is not None:
                    ahead.close()
            return not episodes.left_for_index(conn)
    except WriterBusy:
        return False
