"""The registry of derived data (core.store.derived) names every table that is not the archive itself:
a table added to the schema without a kind would be neither emptied by an upgrade nor refilled."""

from __future__ import annotations

from threadloom.core.store import db, derived

# the archive: what the agents wrote and where it came from, and what the user gave threadloom
ARCHIVE = {
    "entries",
    "source_files",
    "source_versions",
    "source_reads",
    "ledger_meta",
    *derived.USER_DATA,
    *derived.SYNC_STATE,
}


def test_every_table_is_the_archive_or_a_kind_of_derived_data(tmp_path):
    conn = db.connect(tmp_path / "t.db")
    try:
        tables = {
            name
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not name.startswith(
                ("search_", "sqlite_")
            )  # the search index, kept by core.store.search_index
        }
    finally:
        conn.close()
    assert tables - ARCHIVE == set(derived.TABLES)
    assert len(derived.TABLES) == len(set(derived.TABLES))  # each table belongs to one kind
    assert set(derived.REPLAYED_TABLES) < set(derived.TABLES)
