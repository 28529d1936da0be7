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
leaves the marks; the next writer's `finish_derived` (core.ingest.ledger: ingest, sync, index) does
the rest, whoever it was left by.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from .memory_tables import TABLES as MEMORY_TABLES


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
        batch="placed record by record as files are read (core.ingest.ledger); titles, totals and links of the "
        "sessions marked 'finalize' in derived_pending by Ledger.finalize",
        whole="core.ingest.ledger.rebuild_derived replays every stored record (a schema upgrade: db.REBUILD_KEY)",
    ),
    Kind(
        "prices",
        ("model_rates",),
        batch="core.insight.cost.price_pending prices the usage rows marked priced = 0",
        whole="a new price table marks every row again (cost.PRICES_KEY)",
        version_key="prices_version",
    ),
    Kind(
        "stats",
        ("stats_rollup", "stats_messages", "agent_file_changes", "stats_pending"),
        batch="core.insight.stats.refresh_pending sums the sessions in stats_pending",
        whole="a newer STATS_VERSION marks every session pending",
        version_key="stats_version",
    ),
    Kind(
        "signals",
        ("session_signals", "signals_state", "signals_prompts"),
        batch="core.insight.signals.update finds the signals of the sessions marked 'signals' in derived_pending, "
        "each from its checkpoint (signals_state, signals_prompts): the turns an append added or continued",
        whole="core.insight.signals.rebuild, when the stored ones were found by an older SIGNALS_VERSION",
        version_key="signals_version",
    ),
    Kind(
        "episodes",
        ("episodes",),
        batch="core.insight.episodes.refresh builds the last turn and any new ones of each changed session; "
        "core.insight.episodes.embed_pending embeds every episode without a vector, a batch per transaction; "
        "while the search index is behind (a first load), the sessions are marked 'episodes' in derived_pending "
        "instead and built after the index (core.insight.refresh.catch_up)",
        whole="a newer EPISODES_VERSION builds every session's; another embedding model (core.base.embed.MODEL) "
        "clears every vector",
        version_key="episodes_version",
    ),
    Kind(
        "search index",
        (),  # search_fts: an external-content FTS5 index over entries, kept by core.store.search_index
        batch="indexed in the transaction that stores a file's records, or left to core.store.search_index.build "
        "behind a bulk load (its position: search_index_upto)",
        whole="core.store.search_index.reset, then build",
    ),
)


def unfinished(conn: sqlite3.Connection) -> int:
    """How many sessions have records whose costs, stats' sums or signals are not computed yet: a
    writer stopped (or still at work) between committing them and finishing them. A reader says
    so, rather than that there are none."""
    try:
        return int(
            conn.execute(
                "SELECT count(*) FROM (SELECT session_id FROM derived_pending WHERE kind IN ('finalize', 'signals') "
                "UNION SELECT session_id FROM stats_pending UNION SELECT session_id FROM agent_usage WHERE priced = 0)"
            ).fetchone()[0]
        )
    except sqlite3.OperationalError:  # an archive not made yet: nothing is left
        return 0


# every derived table: emptied by a schema upgrade (core.store.db) and refilled from the records
TABLES = tuple(table for kind in KINDS for table in kind.tables)
# what a replay of every session empties first (core.ingest.ledger.rebuild_derived): the sessions' own tables
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
# is given these rows back (core.store.db.read_user_data, write_user_data). Table: its columns.
USER_DATA: dict[str, tuple[str, ...]] = {
    "source_roots": ("path", "added_at"),  # the folders given with --source, rescanned on each run
    "hidden": ("kind", "key", "hidden_at"),  # the sessions and projects hidden from the lists
    # tags, notes, bookmarks, knowledge entries and their versions, relations, conflicts (core.insight.memory)
    **MEMORY_TABLES,
}

# Sync state: what this archive pushed to a hub and pulled from one (core.ingest.sync), the machine and person
# each pulled file came from. Neither records nor derived from them, and not the user's: `ingest --rebuild`
# carries it with the records it describes (core.store.carry); an archive started afresh has none, and its
# next sync pulls (and notes its pushes) again.
SYNC_STATE = ("sync_pushed", "sync_pulled", "sync_rows")
