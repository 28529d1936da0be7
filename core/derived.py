"""The registry of derived data: everything threadloom computes from the stored records, in one place.

The records (`entries`, `source_files`, their versions) are the archive; every other table is
derived from them and can be rebuilt from them. Each kind below says which tables it fills, which
version of its computation the database holds (in `ledger_meta`), how a batch of changed sessions
is brought up to date, and what rebuilds it whole. The order of KINDS is the order a batch runs in:
each kind reads what the ones before it wrote (costs read usage; the stats' sums read costs; signals
read all of them).

Crash-consistency rests on one rule: what a batch leaves to be done is marked in the database in the
transaction that made it due (`derived_pending`, `stats_pending`, `agent_usage.priced = 0`, the
search index's position), and unmarked in the transaction that does it. A run killed at any point
leaves the marks; the next run's `finish` does the rest, whoever it was left by.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from threadloom.core.memory import TABLES as MEMORY_TABLES


@dataclass(frozen=True)
class Kind:
    """One kind of derived data."""

    name: str
    tables: tuple[str, ...]
    batch: str  # how a batch of changed sessions brings it up to date
    whole: str  # what rebuilds it from the records
    version_key: str | None = None  # ledger_meta key of the version its stored values were computed by


KINDS = (
    Kind(
        "sessions",
        ("agent_sessions", "agent_turns", "agent_tool_calls", "agent_usage", "derived_pending"),
        batch="placed record by record as files are read (core.ledger); titles, totals and links of the "
        "sessions marked 'finalize' in derived_pending by Ledger.finalize",
        whole="core.ledger.rebuild_derived replays every stored record (a schema upgrade: db.REBUILD_KEY)",
    ),
    Kind(
        "prices",
        ("model_rates",),
        batch="core.cost.price_pending prices the usage rows marked priced = 0",
        whole="a new price table marks every row again (cost.PRICES_KEY)",
        version_key="prices_version",
    ),
    Kind(
        "stats",
        ("stats_rollup", "stats_messages", "agent_file_changes", "stats_pending"),
        batch="core.stats.refresh_pending sums the sessions in stats_pending",
        whole="a newer STATS_VERSION marks every session pending",
        version_key="stats_version",
    ),
    Kind(
        "signals",
        ("session_signals", "signals_state", "signals_prompts"),
        batch="core.signals.update finds the signals of the sessions marked 'signals' in derived_pending, "
        "each from its checkpoint (signals_state, signals_prompts): the turns an append added or continued",
        whole="core.signals.rebuild, when the stored ones were found by an older SIGNALS_VERSION",
        version_key="signals_version",
    ),
    Kind(
        "episodes",
        ("episodes",),
        batch="core.episodes.refresh builds the last turn and any new ones of each changed session; "
        "core.episodes.embed_pending embeds every episode without a vector, a batch per transaction",
        whole="a newer EPISODES_VERSION builds every session's; another embedding model (core.embed.MODEL) "
        "clears every vector",
        version_key="episodes_version",
    ),
    Kind(
        "search index",
        (),  # search_fts: an external-content FTS5 index over entries, kept by core.search_index
        batch="indexed in the transaction that stores a file's records, or left to core.search_index.build "
        "behind a bulk load (its position: search_index_upto)",
        whole="core.search_index.reset, then build",
    ),
)

# every derived table: emptied by a schema upgrade (core.db) and refilled from the records
TABLES = tuple(table for kind in KINDS for table in kind.tables)
# what a replay of every session empties first (core.ledger.rebuild_derived): the sessions' own tables
# and the sums made from them; prices and signals are kept and brought up to date by `finish`
REPLAYED_TABLES = tuple(
    table
    for kind in KINDS
    if kind.name in ("sessions", "stats")
    for table in kind.tables
    if table != "derived_pending"
)

# what was taken from where records were placed, and is dropped when a replay places them again
CHECKPOINTS = ("signals_state", "signals_prompts", "episodes")

# User data: what the user gave threadloom, which no record holds and nothing can rebuild. Never
# emptied by an upgrade; a database started afresh (`ingest --rebuild`, a first load begun again)
# is given these rows back (core.db.read_user_data, write_user_data). Table: its columns.
USER_DATA: dict[str, tuple[str, ...]] = {
    "source_roots": ("path", "added_at"),  # the folders given with --source, rescanned on each run
    "hidden": ("kind", "key", "hidden_at"),  # the sessions and projects hidden from the lists
    # tags, notes, bookmarks, knowledge entries and their versions, relations, conflicts (core.memory)
    **MEMORY_TABLES,
}

# Sync state: what this archive pushed to a hub and pulled from one (core.sync), the machine and person
# each pulled file came from. Neither records nor derived from them, and not the user's: an archive
# started afresh (`ingest --rebuild`) has none, and its next sync pulls (and notes its pushes) again.
SYNC_STATE = ("sync_pushed", "sync_pulled", "sync_rows")

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
    from threadloom.core import episodes
    from threadloom.core.cost import price_pending
    from threadloom.core.db import get_meta
    from threadloom.core.stats import refresh_pending
    from threadloom.core.text import SIGNALS_VERSION, SIGNALS_VERSION_KEY

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
    from threadloom.core import signals  # a run with nothing new never loads it

    if outdated:
        seconds = signals.rebuild(conn, on_signals)
    else:
        seconds = signals.update(conn, due | changed | repriced, on_signals)
    conn.executemany(
        "DELETE FROM derived_pending WHERE kind = 'signals' AND session_id = ?", [(s,) for s in due]
    )
    return seconds
